#!/usr/bin/env bash
# Keychain sync against damage and a hostile server (dpfs(1) "Keychain sync"): an
# invitation with a bit flipped in any of its parts is refused at join with one line
# and joins nothing; one whose check was remade over other keys is refused because
# those keys endorse no member. A record altered on the server shows in status and
# the log rather than "connected", until a new version replaces it. A payload larger
# than any record is refused unread: one log line, named in status, the daemon's
# memory stays small, and what follows still syncs. Every wait is a condition with a deadline.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/postgres.bash"
source "$(dirname "$0")/syncdevices.bash"
require_tools runuser

DEVICES="a b"

# flip SOURCE FIELD OFFSET OUT [REMAKE]: SOURCE with one bit flipped OFFSET bytes into
# its FIELD-th length-prefixed field (a negative OFFSET: into the field's length), as
# OUT (mode 0600); REMAKE=remake makes the last field, the check, anew over the change.
flip() {
    python3 - "$@" <<'PY'
import hashlib, os, sys
source, field, offset, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
data = bytearray(open(source, "rb").read())
starts, pos = [], 0
while pos < len(data):
    starts.append(pos)
    pos += 4 + int.from_bytes(data[pos:pos + 4], "big")
data[starts[field] + 4 + offset] ^= 1
if len(sys.argv) > 5:
    token = bytes(data[starts[4] + 4:starts[4] + 36])
    body = bytes(data[:starts[6]])
    data[starts[6] + 4:] = hashlib.blake2b(body, key=token, digest_size=32).digest()
fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, bytes(data)); os.close(fd)
PY
}
in_no_account() { "$DPFS" sync status "$(mnt "$1")" | grep -q 'in no account'; }
outstanding_invitations() { [ "$(pg_psql -c 'SELECT count(*) FROM dpfs_sync_invitations')" = "$1" ]; }
last_error() { "$DPFS" sync status "$(mnt "$1")" --json | json_field lastError; }
peak_kb() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$(daemon_pid "$(mnt "$1")")/status"; }

pg_start || { fail "start PostgreSQL" "$(cat "$PGWORK"/*.log 2>/dev/null | tail -3)"; finish; }
setup_devices
check "a creates the account" "$DPFS" sync create "$(mnt a)" --server "$PGURL"
check "a invites b" "$DPFS" sync invite "$(mnt a)" --to-file "$WORK/invite"

# --- a damaged invitation: each part, then the check remade over other keys
# The fields: 0 the format's name, 1 account id, 2 server, 3 epoch, 4 token, 5 account
# key then id key, 6 the check.
for part in "0 3 the format's name" "1 7 the account id" "2 5 the server" "3 0 the epoch" "4 9 the token" \
            "5 3 the account key" "5 40 the id key" "6 20 the check" "5 -1 a field's length"; do
    read -r field offset name <<< "$part"
    flip "$WORK/invite" "$field" "$offset" "$WORK/damaged"
    check_error "an invitation with a bit flipped in $name is refused" \
        "the invitation $WORK/damaged is damaged\|$WORK/damaged is not a dpfs sync invitation" \
        "$DPFS" sync join "$(mnt b)" --server "$PGURL" --invitation-file "$WORK/damaged"
    check "and b joined nothing" in_no_account b
done
flip "$WORK/invite" 5 3 "$WORK/forged" remake
check_error "an invitation whose keys endorse no member is refused" "keys are not those of the account" \
    "$DPFS" sync join "$(mnt b)" --server "$PGURL" --invitation-file "$WORK/forged"
check "and b joined nothing" in_no_account b
check "the invitation is still outstanding" outstanding_invitations 1
check "b joins with the intact invitation" "$DPFS" sync join "$(mnt b)" --server "$PGURL" --invitation-file "$WORK/invite"
check "b is connected" within 30 connection_is b connected
add a MARK-service-first first >/dev/null
check "an item reaches b" within 30 has_value b MARK-service-first first

# --- a record altered on the server is named, not passed over
check "a record is altered on the server" pg_psql -c "
    UPDATE dpfs_sync_accounts SET seq = seq + 1;
    UPDATE dpfs_sync_records r SET payload = set_byte(payload, 40, get_byte(payload, 40) # 1), seq = a.seq
        FROM dpfs_sync_accounts a WHERE a.account_id = r.account_id;
    SELECT pg_notify('dpfs_sync_' || account_id, '') FROM dpfs_sync_accounts"
check "b's status says a record does not open" within 30 connection_is b "connected, 1 records do not open"
check "and its last error says why" sh -c "'$DPFS' sync status '$(mnt b)' | grep -q 'last error: 1 records on the sync server do not open'"
check "b's log says it" grep -q "keychain sync: 1 records on the sync server do not open" "$WORK/dev-b/daemon.log"
check "a's status says it too" within 30 connection_is a "connected, 1 records do not open"
check "a writes the record anew" update a MARK-service-first second
check "the new version reaches b" within 30 has_value b MARK-service-first second
check "b is connected again" within 30 connection_is b connected
check "and a" within 30 connection_is a connected
expect_eq "b's last error is gone" "$(last_error b)" ""

# --- a payload larger than any record: refused unread, sync goes on
peak_before=$(peak_kb b)
check "a 48 MiB payload is inserted on the server" pg_psql -c "
    UPDATE dpfs_sync_accounts SET seq = seq + 1;
    INSERT INTO dpfs_sync_records SELECT account_id, repeat('e', 32), epoch, seq,
        convert_to(repeat('x', 48 * 1024 * 1024), 'UTF8') FROM dpfs_sync_accounts;
    SELECT pg_notify('dpfs_sync_' || account_id, '') FROM dpfs_sync_accounts"
check "b refuses it with one log line" within 60 grep -q \
    "keychain sync: refused record eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee at sequence [0-9]*: its payload is 50331648 bytes" \
    "$WORK/dev-b/daemon.log"
expect_eq "one line" "$(grep -c 'refused record eeee' "$WORK/dev-b/daemon.log")" "1"
check "b's status names it" within 30 connection_is b "connected, 1 records refused as too large"
check "its last error gives the record's id, size and sequence" sh -c "'$DPFS' sync status '$(mnt b)' \
    | grep -q 'last error: 1 records on the sync server are larger than .*: eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee (50331648 bytes, sequence [0-9]*)'"
peak_after=$(peak_kb b)
log "b's daemon peak resident memory: $peak_before kB before, $peak_after kB after"
check "b's daemon did not take the payload in" test "$((peak_after - peak_before))" -lt 16384
add a MARK-service-after after-oversized >/dev/null
check "an item added after it reaches b" within 30 has_value b MARK-service-after after-oversized
check "b is still connected, and still names it" connection_is b "connected, 1 records refused as too large"
finish
