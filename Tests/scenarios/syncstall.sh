#!/usr/bin/env bash
# Keychain sync against a server that stops answering with its connections open
# (dpfs(1) "Keychain sync"): the server's processes stopped by SIGSTOP, then a
# statement that waits on a lock the test holds. Status turns to "server unreachable",
# commands fail with one line in bounded time, the keychain works meanwhile, and what a
# command left unfinished is not done later, when the server answers again: neither a
# transaction it abandoned nor a command whose requester was interrupted. Every wait
# is a condition with a deadline; the deadlines leave room for a busy machine.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/postgres.bash"
source "$(dirname "$0")/syncdevices.bash"
require_tools runuser pgrep timeout

DEVICES="a b"
cli=""
locker=""

scenario_cleanup() {
    [ -n "$cli" ] && kill "$cli" 2>/dev/null
    if [ -n "$locker" ]; then exec 3>&- 2>/dev/null; kill "$locker" 2>/dev/null; fi
    unmount_devices
    pg_remove
    return 0
}

status_field() { "$DPFS" sync status "$(mnt "$1")" --json | json_field "$2"; }
members_on_server() { pg_psql -c 'SELECT count(*) FROM dpfs_sync_members'; }

pg_start || { fail "start PostgreSQL" "$(cat "$PGWORK"/*.log 2>/dev/null | tail -3)"; finish; }
setup_devices
check "a creates the account" "$DPFS" sync create "$(mnt a)" --server "$PGURL"
check "a invites b" "$DPFS" sync invite "$(mnt a)" --to-file "$WORK/invite-b"
check "b joins" "$DPFS" sync join "$(mnt b)" --server "$PGURL" --invitation-file "$WORK/invite-b"
check "a is connected" within 30 connection_is a connected
check "b is connected" within 30 connection_is b connected
add a MARK-before before >/dev/null
check "an item reaches b" within 30 has_value b MARK-before before

# --- the server stopped, its connections open: every statement goes unanswered
check "the server's processes stop" pg_freeze
started=$SECONDS
check "a adds while the server is stalled" add a MARK-stalled stalled
check "a's status turns to server unreachable" within 90 connection_is a "server unreachable"
log "a's status said so $((SECONDS - started)) s after the add"
check "its last error says the server did not answer" sh -c "'$DPFS' sync status '$(mnt a)' | grep -q 'last error: .*did not answer'"
expect_eq "the add waits as a pending change" "$(status_field a pending)" "1"
check "the keychain works meanwhile" has_value a MARK-stalled stalled
started=$SECONDS
check_error "an invite fails with one line" "the sync server is unreachable" \
    timeout 120 "$DPFS" sync invite "$(mnt a)" --to-file "$WORK/invite-stalled"
log "in $((SECONDS - started)) s"
check "and writes no invitation" test ! -e "$WORK/invite-stalled"
started=$SECONDS
check_error "a leave fails with one line" "the sync server is unreachable" timeout 120 "$DPFS" sync leave "$(mnt b)"
log "in $((SECONDS - started)) s"
check "and b is still in the account" "$DPFS" sync status "$(mnt b)" --json

# An invite whose requester is interrupted while the daemon waits for the server is
# dropped, though the server answers again before the daemon gets to it.
waiting_for_reply() { grep -q poll "/proc/$1/wchan"; }
"$DPFS" sync invite "$(mnt a)" --to-file "$WORK/invite-interrupted" >/dev/null 2>&1 &
cli=$!
check "an invite is sent and waits for its reply" within 30 waiting_for_reply "$cli"
kill "$cli"; wait "$cli" 2>/dev/null; cli=""
check "the server's processes continue" pg_thaw
check "a's daemon drops the invite whose requester hung up" \
    within 60 grep -q "dropped a sync invite: its requester hung up" "$WORK/dev-a/daemon.log"
check "a is connected again" within 60 connection_is a connected
check "b is connected again" within 60 connection_is b connected
check "what a added meanwhile reaches b" within 30 has_value b MARK-stalled stalled
expect_eq "nothing waits on a" "$(status_field a pending)" "0"
check "the dropped invite wrote no file" test ! -e "$WORK/invite-interrupted"
expect_eq "and no invitation is on the server" "$(pg_psql -c 'SELECT count(*) FROM dpfs_sync_invitations')" "0"
expect_eq "b is still a member" "$(members_on_server)" "2"
check "the daemon logged the stall" grep -q "keychain sync: the sync server is unreachable: it did not answer" \
    "$WORK/dev-a/daemon.log"

# --- a statement that waits on the server (a lock the test holds): the leave gives up
# on it, and the server, reading the end of the connection, rolls it back.
mkfifo "$WORK/locker.in"
pg_psql < "$WORK/locker.in" >/dev/null 2>&1 &
locker=$!
exec 3> "$WORK/locker.in"
echo "BEGIN; LOCK TABLE dpfs_sync_members IN ACCESS EXCLUSIVE MODE;" >&3
members_locked() {
    [ "$(pg_psql -c "SELECT count(*) FROM pg_locks WHERE relation = 'dpfs_sync_members'::regclass
        AND mode = 'AccessExclusiveLock' AND granted")" = 1 ]
}
check "a session holds the members' table" within 30 members_locked
started=$SECONDS
check_error "b's leave gives up on the unanswered statement" "did not answer" \
    timeout 120 "$DPFS" sync leave "$(mnt b)"
log "in $((SECONDS - started)) s"
echo "COMMIT;" >&3
exec 3>&-
wait "$locker"; locker=""
leave_gone() { [ "$(pg_psql -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'DELETE FROM dpfs_sync_members%'")" = 0 ]; }
check "the server ends the abandoned leave" within 60 leave_gone
expect_eq "the leave was not carried out" "$(members_on_server)" "2"
expect_eq "and asked for no rotation" "$(pg_psql -c 'SELECT rotate FROM dpfs_sync_accounts')" "f"
check "b is connected again" within 60 connection_is b connected
add b MARK-after-lock after >/dev/null
check "b still syncs" within 30 has_value a MARK-after-lock after
check "a leave goes through once the server answers" "$DPFS" sync leave "$(mnt b)"
expect_eq "and is on the server" "$(members_on_server)" "1"
finish
