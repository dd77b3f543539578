#!/usr/bin/env bash
# Keychain sync through PostgreSQL (dpfs(1) "Keychain sync"): a private server started
# here; three devices in one account converge after adds, updates, deletes, a
# conflict and an offline period; ThisDeviceOnly and non-synchronizable items never
# reach the server, nor does an item with an access control (no add or update makes
# one synchronizable); the server's tables hold no plaintext; a device that left
# reads nothing added after (the keys rotated); an app sees synced items through its
# own access group; the server's password, in each of its forms, is never shown,
# logged or passed on. Every wait is a condition with a deadline.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/postgres.bash"
source "$(dirname "$0")/syncdevices.bash"
require_tools runuser

DEVICES="a b c"

absent() { ! "$DPFS" keychain find "$(mnt "$1")" --service "$2" --synchronizable any >/dev/null 2>&1; }
epoch() { "$DPFS" sync status "$(mnt "$1")" --json | sed -n 's/.*"epoch":\([0-9]*\).*/\1/p'; }
# Conditions for `within`, evaluated at each poll.
epoch_above() { [ "$(epoch "$1")" -gt "$2" ]; }
server_epoch_above() { [ "$(pg_psql -c 'SELECT epoch FROM dpfs_sync_accounts')" -gt "$1" ]; }

pg_start || { fail "start PostgreSQL" "$(cat "$PGWORK"/*.log 2>/dev/null | tail -3)"; finish; }
log "PostgreSQL on port $PGPORT"
# Each device names the server with the password in another of libpq's forms (the
# server trusts local connections, so any password does).
SECRET=Sup3rS3cretPW
SERVER_A="host=127.0.0.1 port=$PGPORT user=dpfs password=$SECRET dbname=sync"
SERVER_B="$PGURL?password=$SECRET"
SERVER_C="postgresql://dpfs:$SECRET@127.0.0.1:$PGPORT/sync"

setup_devices

# --- create, invite, join
# libpq is loaded at the first connection, not at mount: a daemon in no account maps
# none of it (nor the libraries it brings).
daemon_maps() {
    local pid; pid=$("$DPFS" status "$(mnt "$1")" --json | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
    [ -n "$pid" ] && cat "/proc/$pid/maps"
}
maps_libpq() { daemon_maps "$1" | grep -q '/libpq\.so'; }
lacks_libpq() { local maps; maps=$(daemon_maps "$1") && grep -q '/libsqlite3\.so' <<< "$maps" && ! grep -q '/libpq\.so' <<< "$maps"; }
check "a daemon in no account has not loaded libpq" lacks_libpq a
check_error "sync needs an account first" "in no sync account" "$DPFS" sync invite "$(mnt a)" --to-file "$WORK/inv"
printf 'not an invitation' > "$WORK/garbage"; chmod 600 "$WORK/garbage"
cp "$WORK/garbage" "$WORK/inv-none"
check_error "an unreachable server is one clear line" "unreachable" \
    "$DPFS" sync create "$(mnt a)" --server "postgresql://dpfs@127.0.0.1:1/sync"
check "and leaves the device in no account" sh -c "'$DPFS' sync status '$(mnt a)' | grep -q 'in no account'"
# A malformed string fails libpq's parse, whose message repeats the string: refused
# with one line of dpfs's own, before any connection.
refused_unrepeated() {
    local out
    out=$("$@" 2>&1) && return 1
    grep -q "not a connection string libpq can read" <<< "$out" && ! grep -q -e LeakMe123 -e unreachable <<< "$out"
}
check "a URL with an empty IPv6 host is refused without its password" refused_unrepeated \
    "$DPFS" sync create "$(mnt a)" --server "postgresql://dpfs:LeakMe123@[]/sync"
check "and one with text after the IPv6 host" refused_unrepeated \
    "$DPFS" sync create "$(mnt a)" --server "postgresql://dpfs:LeakMe123@[::1]x/sync"
check "and a key=value string that does not parse" refused_unrepeated \
    "$DPFS" sync create "$(mnt a)" --server "host=127.0.0.1 password='LeakMe123"
check "join refuses it the same" refused_unrepeated \
    "$DPFS" sync join "$(mnt b)" --server "postgresql://dpfs:LeakMe123@[::1]x/sync" --invitation-file "$WORK/inv-none"
check_error "a file that is no invitation is refused" "is not a dpfs sync invitation" \
    "$DPFS" sync join "$(mnt b)" --server "$PGURL" --invitation-file "$WORK/garbage"
# While sync create waits on the server, the process list shows its --server with the
# password overwritten: a server here that accepts and never answers holds it there.
python3 -c '
import socket, sys, time
listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(1)
open(sys.argv[1], "w").write(str(listener.getsockname()[1]))
held = listener.accept()[0]; open(sys.argv[2], "w").close(); time.sleep(30)
' "$WORK/silent-port" "$WORK/silent-accepted" &
SILENT=$!
within 20 test -s "$WORK/silent-port"
"$DPFS" sync create "$(mnt a)" --server "postgresql://dpfs:LeakMe123@127.0.0.1:$(cat "$WORK/silent-port")/sync" \
    >/dev/null 2>&1 &
WAITING=$!
within 20 test -e "$WORK/silent-accepted"
cmdline=$(tr '\0' ' ' < "/proc/$WAITING/cmdline")
check "a waiting sync create still shows its --server" grep -q -- "--server \*\*\*" <<< "$cmdline"
check_fails "but not the password in it" grep -q LeakMe123 <<< "$cmdline"
wait "$WAITING"
kill "$SILENT" 2>/dev/null; wait "$SILENT" 2>/dev/null
check "a creates the account" "$DPFS" sync create "$(mnt a)" --server "$SERVER_A"
check "and its daemon has loaded libpq since" maps_libpq a
check_error "a is in one account at a time" "already in sync account" "$DPFS" sync create "$(mnt a)" --server "$PGURL"
check "a invites b" "$DPFS" sync invite "$(mnt a)" --to-file "$WORK/invite-b"
expect_eq "the invitation is mode 0600" "$(stat -c %a "$WORK/invite-b")" "600"
cp "$WORK/invite-b" "$WORK/invite-b-copy"
cp "$WORK/invite-b" "$WORK/invite-b-open"; chmod 644 "$WORK/invite-b-open"
check_error "an invitation others can read is refused" "readable by others" \
    "$DPFS" sync join "$(mnt b)" --server "$PGURL" --invitation-file "$WORK/invite-b-open"
check_fails "the invitation holds no server password" grep -q "$SECRET" "$WORK/invite-b"
check "b joins" "$DPFS" sync join "$(mnt b)" --server "$SERVER_B" --invitation-file "$WORK/invite-b"
check_error "an invitation joins once" "used already" \
    "$DPFS" sync join "$(mnt c)" --server "$PGURL" --invitation-file "$WORK/invite-b-copy"
check "a invites c" "$DPFS" sync invite "$(mnt a)" --to-file "$WORK/invite-c"
check "c joins" "$DPFS" sync join "$(mnt c)" --server "$SERVER_C" --invitation-file "$WORK/invite-c"
check "b is connected" within 20 connection_is b connected
check "c is connected" within 20 connection_is c connected
# status shows the server as libpq reads it, every password form left out.
server_shown() { "$DPFS" sync status "$(mnt "$1")" --json | json_field server; }
expect_eq "status shows a's key=value server without its password" "$(server_shown a)" \
    "user=dpfs dbname=sync host=127.0.0.1 port=$PGPORT"
expect_eq "and b's URL without its ?password=" "$(server_shown b)" "$PGURL"
expect_eq "and c's URL without its user:password@" "$(server_shown c)" "$PGURL"
for d in $DEVICES; do
    check_fails "sync status on $d names no password" sh -c "'$DPFS' sync status '$(mnt "$d")' | grep -q '$SECRET'"
done
check "status names the sync" sh -c "'$DPFS' status '$(mnt a)' | grep -q 'keychain sync: connected'"

# --- add, update, delete
started=${EPOCHREALTIME/./}
check "add on a" add a MARK-service-add MARK-secret-one --label MARK-label-one
check "the add reaches b" within 20 has_value b MARK-service-add MARK-secret-one
log "the add was on b $(( (${EPOCHREALTIME/./} - started) / 1000 )) ms after the call began (polled by dpfs keychain find)"
check "the add reaches c" within 20 has_value c MARK-service-add MARK-secret-one
check "update on b" update b MARK-service-add MARK-secret-two
check "the update reaches a" within 20 has_value a MARK-service-add MARK-secret-two
check "the update reaches c" within 20 has_value c MARK-service-add MARK-secret-two
check "delete on c" "$DPFS" keychain delete "$(mnt c)" --service MARK-service-add --synchronizable yes
check "the delete reaches a" within 20 absent a MARK-service-add
check "the delete reaches b" within 20 absent b MARK-service-add
add a MARK-service-later MARK-secret-later >/dev/null
check "a later change syncs" within 20 has_value b MARK-service-later MARK-secret-later
check "the deleted item does not come back" absent b MARK-service-add
check "nor on a" absent a MARK-service-add
# A synced item keeps its access group: the sandbox's app finds it with a plain query.
group_of() {
    "$DPFS" keychain find "$(mnt "$1")" --service "$2" --synchronizable yes --return attributes --json \
        | sed -n 's/.*"accessGroup":"\([^"]*\)".*/\1/p'
}
group_a=$(group_of a MARK-service-later)
check "the item has a group on a" test -n "$group_a"
expect_eq "a synced item lands in the group it had" "$(group_of c MARK-service-later)" "$group_a"

# --- a locked or restarted receiver: the item waits for its class key, then arrives
"$DPFS" lock "$(mnt b)" --now >/dev/null
check "a adds a WhenUnlocked item" sh -c "printf while-locked | '$DPFS' keychain add '$(mnt a)' --service MARK-service-locked --synchronizable yes --accessible WhenUnlocked --data-file -"
check "c gets the WhenUnlocked item at once" within 20 has_value c MARK-service-locked while-locked
check "b, locked, does not have it yet" sh -c "'$DPFS' keychain find '$(mnt b)' --service MARK-service-locked --synchronizable yes 2>&1 | grep -q -e errSecItemNotFound -e errSecInteractionNotAllowed"
# Held back by that record, b still sends what it changes meanwhile: a record a has
# changed since (unseen by b) waits for b's pull, the others go at once.
check "a updates an item while b is held back" update a MARK-service-later from-a-meanwhile
check "b, locked, updates the same item" update b MARK-service-later from-b-meanwhile
add b MARK-service-from-locked-b sent-while-locked >/dev/null
check "b's other change reaches a while b is locked" within 20 has_value a MARK-service-from-locked-b sent-while-locked
check "b unlocks" "$DPFS" unlock "$(mnt b)" --passcode-file "$PASS"
check "b gets it after the unlock" within 20 has_value b MARK-service-locked while-locked
check "the item both changed ends as b's later change on a" within 20 has_value a MARK-service-later from-b-meanwhile
check "and on b" has_value b MARK-service-later from-b-meanwhile
check "b restarts" "$DPFS" restart "$(mnt b)"
check "b's sync waits for the first unlock" within 20 connection_is b "waiting for the first unlock"
add a MARK-service-restart after-restart >/dev/null
check "b unlocks after the restart" "$DPFS" unlock "$(mnt b)" --passcode-file "$PASS"
check "b gets what came meanwhile" within 20 has_value b MARK-service-restart after-restart
check "b is connected again" within 20 connection_is b connected

# --- what never leaves
printf 'MARK-secret-local' | "$DPFS" keychain add "$(mnt a)" --service MARK-service-local --data-file - >/dev/null
printf 'MARK-secret-tdo' | "$DPFS" keychain add "$(mnt a)" --service MARK-service-tdo \
    --accessible AfterFirstUnlockThisDeviceOnly --data-file - >/dev/null
check_error "a synchronizable item cannot be ThisDeviceOnly" "errSecParam" \
    sh -c "printf x | '$DPFS' keychain add '$(mnt a)' --service tdo-sync --synchronizable yes --accessible WhenUnlockedThisDeviceOnly --data-file -"
# An access control asks this device's user, whom the others cannot ask: as on iOS,
# no add or update makes an item with one synchronizable.
check_error "an item with an access control is not synchronizable" "errSecParam" \
    sh -c "printf x | '$DPFS' keychain add '$(mnt a)' --service MARK-service-acl --synchronizable yes --access-control userPresence --data-file -"
printf 'MARK-secret-acl' | "$DPFS" keychain add "$(mnt a)" --service MARK-service-acl \
    --access-control userPresence --data-file - >/dev/null
"$DPFS" biometry respond "$(mnt a)" passcode --passcode-file "$PASS" >/dev/null
check_error "nor can an update make one synchronizable" "errSecParam" \
    "$DPFS" keychain update "$(mnt a)" --service MARK-service-acl --new-synchronizable yes
add a MARK-service-fence fence >/dev/null
check "a fence item after them arrives" within 20 has_value b MARK-service-fence fence
check "a non-synchronizable item stays on a" absent b MARK-service-local
check "a ThisDeviceOnly item stays on a" absent b MARK-service-tdo
check "an item with an access control stays on a" absent b MARK-service-acl

# --- a conflict: the server down, both update, the later date wins everywhere
add a MARK-service-conflict base >/dev/null
check "the conflict's item is everywhere" within 20 has_value c MARK-service-conflict base
pg_stop
check "status says the server is unreachable" within 30 connection_is a "server unreachable"
check "the keychain works while the server is down" update a MARK-service-conflict from-a
sleep 0.05  # two modification dates apart
check "b updates too, later" update b MARK-service-conflict from-b
add a MARK-service-offline MARK-secret-offline >/dev/null
check "a deletes offline" "$DPFS" keychain delete "$(mnt a)" --service MARK-service-later --synchronizable yes
pg_restart || fail "restart PostgreSQL"
check "a reconnects" within 30 connection_is a connected
check "the later update wins on a" within 20 has_value a MARK-service-conflict from-b
check "and on b" within 20 has_value b MARK-service-conflict from-b
check "and on c" within 20 has_value c MARK-service-conflict from-b
check "an offline add reaches b" within 20 has_value b MARK-service-offline MARK-secret-offline
check "an offline delete reaches c" within 20 absent c MARK-service-later
# What the server said as it shut down (its FATAL, a notice to libpq) is a line of the
# daemon's log with its time and level, never written raw beside them.
check "the daemon logged the server closing its connection" \
    grep -q " info dpfs.sync: .*keychain sync: the sync server closed the connection: terminating connection due to administrator command" \
    "$WORK/dev-a/daemon.log"
unprefixed_lines() {
    grep -v -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{4} (trace|debug|info|notice|warning|error|critical) ' \
        "$WORK"/dev-*/daemon.log
}
check_fails "every line of every daemon's log has its time and level" unprefixed_lines

# --- updates at once on every device: all converge on one of them
add a MARK-service-race start >/dev/null
check "the raced item is everywhere" within 20 has_value c MARK-service-race start
for round in 1 2 3; do
    for d in $DEVICES; do update "$d" MARK-service-race "$d-$round" >/dev/null & done
    wait
done
same_everywhere() {
    local va vb vc
    va=$(value a MARK-service-race); vb=$(value b MARK-service-race); vc=$(value c MARK-service-race)
    [ -n "$va" ] && [ "$va" = "$vb" ] && [ "$vb" = "$vc" ] && [ "${va#*-}" = 3 ]
}
check "concurrent updates converge on one last version" within 30 same_everywhere

# --- the server holds no plaintext
dump=$(pg_dump_all)
check "the dump holds the records" test "$(pg_psql -c 'SELECT count(*) FROM dpfs_sync_records')" -ge 4
check_fails "no plaintext marker on the server" sh -c "printf '%s' \"\$1\" | grep -q MARK" _ "$dump"
check_fails "no access group on the server" sh -c "printf '%s' \"\$1\" | grep -qi 'com.example'" _ "$dump"
check_fails "no account name on the server" sh -c "printf '%s' \"\$1\" | grep -q 'user'" _ "$(pg_psql -c 'SELECT record_id, encode(payload, $$escape$$) FROM dpfs_sync_records')"

# --- leave: the others rotate; the left device reads nothing added after
# The server (or anyone who writes its tables) adds a member of its own: without the
# account key it cannot endorse it, so the rotation gives it nothing and drops it.
forged=ffffffffffffffffffffffffffffffff
check "a row the server adds as a member" pg_psql -c "INSERT INTO dpfs_sync_members
    SELECT account_id, '$forged', decode(repeat('ab', 32), 'hex'), decode(repeat('cd', 32), 'hex') FROM dpfs_sync_accounts"
epoch_before=$(epoch a)
check "c leaves" "$DPFS" sync leave "$(mnt c)"
check "c is in no account" sh -c "'$DPFS' sync status '$(mnt c)' | grep -q 'in no account'"
check "the account rotates its key" within 20 server_epoch_above "$epoch_before"
check "a takes the new key" within 20 epoch_above a "$epoch_before"
check "b takes the new key" within 20 epoch_above b "$epoch_before"
add a MARK-service-after-leave after >/dev/null
check "b gets what is added after" within 20 has_value b MARK-service-after-leave after
check "c does not" absent c MARK-service-after-leave
expect_eq "every record is under the new epoch" \
    "$(pg_psql -c "SELECT count(*) FROM dpfs_sync_records WHERE epoch <= $epoch_before")" "0"
expect_eq "c holds no key on the server" "$(pg_psql -c "SELECT count(*) FROM dpfs_sync_keys WHERE device_id <> '$forged'")" "2"
expect_eq "the forged member got no key" "$(pg_psql -c "SELECT count(*) FROM dpfs_sync_keys WHERE device_id = '$forged'")" "0"
expect_eq "and is no member any more" "$(pg_psql -c "SELECT count(*) FROM dpfs_sync_members WHERE device_id = '$forged'")" "0"
check "c keeps its own copy of what it had" has_value c MARK-service-conflict from-b
check "c has no sync state left" test ! -e "$WORK/dev-c/sync.json"

# A leave needs no key: b, restarted and not unlocked, cannot open its sealed password
# and leaves with the server as status shows it (the server trusts local connections).
check "b restarts again" "$DPFS" restart "$(mnt b)"
check "b leaves before its first unlock" "$DPFS" sync leave "$(mnt b)"
check "b has no sync state left" test ! -e "$WORK/dev-b/sync.json"

# A join given another database of the server is told which database to give.
check "b unlocks" "$DPFS" unlock "$(mnt b)" --passcode-file "$PASS"
check "a invites b again" "$DPFS" sync invite "$(mnt a)" --to-file "$WORK/invite-b-again"
check_error "a join to a database without the account names the way" "give --server the database the account was made in" \
    "$DPFS" sync join "$(mnt b)" --server "postgresql://dpfs@127.0.0.1:$PGPORT/postgres" --invitation-file "$WORK/invite-b-again"
check "b stays in no account" sh -c "'$DPFS' sync status '$(mnt b)' | grep -q 'in no account'"

# An erased member's sync state no longer opens: it stops and says how to leave.
DEVICES="a b c e"
mkdir -p "$(mnt e)"
"$DPFS" init "$WORK/dev-e" --passcode-file "$PASS" --secret-store "file:$SECRETS" --erase-after 1 >/dev/null \
    && "$DPFS" mount "$WORK/dev-e" "$(mnt e)" >/dev/null && "$DPFS" unlock "$(mnt e)" --passcode-file "$PASS" >/dev/null \
    || fail "device e"
check "a invites e" "$DPFS" sync invite "$(mnt a)" --to-file "$WORK/invite-e"
check "e joins" "$DPFS" sync join "$(mnt e)" --server "$PGURL" --invitation-file "$WORK/invite-e"
check "e is connected" within 20 connection_is e connected
"$DPFS" lock "$(mnt e)" --now >/dev/null
printf 'wrong\n' > "$WORK/wrong-e"; chmod 600 "$WORK/wrong-e"
check_fails "a wrong passcode erases e" "$DPFS" unlock "$(mnt e)" --passcode-file "$WORK/wrong-e"
check "e's sync stops" within 20 connection_is e stopped
check "and its status says how to leave" sh -c "'$DPFS' sync status '$(mnt e)' | grep -q 'dpfs sync leave'"
check "dpfs status says it too" sh -c "'$DPFS' status '$(mnt e)' | grep -q 'keychain sync: stopped'"
check "e leaves" "$DPFS" sync leave "$(mnt e)"

check "the daemon logged the outage" grep -q "keychain sync: server unreachable" "$WORK/dev-a/daemon.log"
check "and the reconnection" grep -q "keychain sync: connected" "$WORK/dev-a/daemon.log"
check_fails "no daemon log names the server's password" grep -q "$SECRET" "$WORK"/dev-*/daemon.log
# A copy of a device directory does not give the password away: sync.json keeps the
# server's string sealed under the untilFirstAuth class key.
check "a keeps its server sealed in sync.json" grep -q '"sealedServer"' "$WORK/dev-a/sync.json"
check_fails "no file of any device directory holds the password" grep -rqa "$SECRET" "$WORK"/dev-a "$WORK"/dev-b "$WORK"/dev-c
daemon_argv() { local d; for d in $DEVICES; do tr '\0' ' ' < "/proc/$(daemon_pid "$(mnt "$d")")/cmdline"; echo; done; }
check_fails "nor any daemon's arguments" grep -q "$SECRET" <(daemon_argv)
finish
