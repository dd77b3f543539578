#!/usr/bin/env bash
# Keychain sync repairs (dpfs(1) "Keychain sync"). Its server put back from a backup: a
# file-level copy of the server's data directory is taken, the three devices change
# items, the copy is put back. Each device sends again what the server lost, and what
# is written to the put-back server, even by a device that reconnects first, reaches
# every device. A server put back to before a key rotation stops sync with one line
# that says what happened. A keychain changed by another hand on one device stops
# there, deleting nothing on the others, and sync goes on around it. Every wait is a
# condition with a deadline.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/postgres.bash"
source "$(dirname "$0")/syncdevices.bash"
require_tools runuser sqlite3

DEVICES="a b c"
SYNCING=$DEVICES  # the devices whose keychains sync

everywhere() { local d; for d in $SYNCING; do has_value "$d" "$1" "$2" || return 1; done; }
records_on_server() { [ "$(pg_psql -c 'SELECT count(*) FROM dpfs_sync_records')" = "$1" ]; }

# The server's data directory copied while it is stopped: a backup, and its put-back.
back_up_server() { pg_stop && pg_as_server cp -a "$PGWORK/data" "$PGWORK/$1" && pg_up; }
put_back_server() {
    pg_stop && rm -rf "$PGWORK/data" && pg_as_server cp -a "$PGWORK/$1" "$PGWORK/data" && pg_up
}

pg_start || { fail "start PostgreSQL" "$(cat "$PGWORK"/*.log 2>/dev/null | tail -3)"; finish; }
setup_devices
check "a creates the account" "$DPFS" sync create "$(mnt a)" --server "$PGURL"
for d in b c; do
    "$DPFS" sync invite "$(mnt a)" --to-file "$WORK/invite-$d" >/dev/null
    check "$d joins" "$DPFS" sync join "$(mnt "$d")" --server "$PGURL" --invitation-file "$WORK/invite-$d"
done
add a MARK-service-kept kept >/dev/null
add a MARK-service-changed before >/dev/null
check "the first items are everywhere" within 30 everywhere MARK-service-changed before

# --- changes after the backup, then the backup put back
check "the server is backed up" back_up_server backup-1
for d in $DEVICES; do check "$d reconnects after the backup" within 30 connection_is "$d" connected; done
add a MARK-service-after-a from-a >/dev/null
update b MARK-service-changed from-b >/dev/null
add c MARK-service-after-c from-c >/dev/null
check "a's add after the backup is everywhere" within 30 everywhere MARK-service-after-a from-a
check "b's update after the backup is everywhere" within 30 everywhere MARK-service-changed from-b
check "c's add after the backup is everywhere" within 30 everywhere MARK-service-after-c from-c
check "the server is put back" put_back_server backup-1
# The first to reconnect writes at once: its record must not go below what the others
# pulled before the put-back.
add b MARK-service-put-back from-b >/dev/null
check "what b adds to the put-back server is everywhere" within 30 everywhere MARK-service-put-back from-b
check "a's lost add is everywhere again" within 30 everywhere MARK-service-after-a from-a
check "c's lost add is everywhere again" within 30 everywhere MARK-service-after-c from-c
check "b's lost update is everywhere again" within 30 everywhere MARK-service-changed from-b
check "the server holds every record again" within 30 records_on_server 5
# Each device sends every lost record it knows of: the first to reconnect repairs all.
check "a device logged what the server lacked" grep -q "the server lacks .* records it held before" "$WORK"/dev-*/daemon.log
update c MARK-service-kept from-c >/dev/null
check "an update after the repair is everywhere" within 30 everywhere MARK-service-kept from-c
check "a is connected" connection_is a connected

# --- b's keychain changed under its running daemon by another hand (a row rewritten
# with sqlite3): b's keychain stops rather than serve or send what it did not write,
# sends no deletion of the item, and the others sync on without it. (A row damaged
# by the disk itself, which the file's stamps do not show, is neither sent nor
# deleted: SyncDamageTests.)
add a MARK-service-damaged intact >/dev/null
check "the item to damage is everywhere" within 30 everywhere MARK-service-damaged intact
damage_b() {
    sqlite3 "$WORK/dev-b/keychain.sqlite" "UPDATE items SET attributes = randomblob(length(attributes))
        WHERE id = (SELECT max(id) FROM items WHERE synchronizable = 1)"
}
check "b's stored item is rewritten" damage_b
check_error "b's keychain stops, naming the change" "changed by another hand" \
    "$DPFS" keychain find "$(mnt b)" --service MARK-service-damaged --synchronizable any
SYNCING="a c"  # b's keychain stays stopped until its next mount refuses the file
add a MARK-service-after-damage after >/dev/null
check "c still receives from a" within 30 has_value c MARK-service-after-damage after
check "the item was not deleted on a" has_value a MARK-service-damaged intact
check "nor on c" has_value c MARK-service-damaged intact
check_error "b keeps refusing" "changed by another hand" \
    "$DPFS" keychain find "$(mnt b)" --service MARK-service-after-damage --synchronizable any

# --- a put-back to before a rotation: the keys of the later epoch are gone with it
check "the server is backed up again" back_up_server backup-2
for d in $SYNCING; do check "$d reconnects after the second backup" within 30 connection_is "$d" connected; done
check "c leaves" "$DPFS" sync leave "$(mnt c)"
server_epoch_is() { [ "$(pg_psql -c 'SELECT epoch FROM dpfs_sync_accounts')" = "$1" ]; }
check "the account rotates its key" within 30 server_epoch_is 2
epoch_of() { [ "$("$DPFS" sync status "$(mnt "$1")" --json | json_field epoch)" = "$2" ]; }
check "a takes the new key" within 30 epoch_of a 2
check "the server is put back to before the leave" put_back_server backup-2
check "a stops" within 30 connection_is a stopped
check "and says why in its status" \
    sh -c "'$DPFS' sync status '$(mnt a)' | grep -q 'put back from a backup taken before a member left'"
check "a's keychain still works" add a MARK-service-local local

finish
