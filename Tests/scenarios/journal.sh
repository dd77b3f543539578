#!/usr/bin/env bash
# The daemon's log: daemon.log, rotated past 1 MiB; the systemd journal too where one
# runs, each line with its syslog priority and the device and mount it is about
# (here a stand-in journal on journald's socket, when no journald runs); --log-level.
source "$(dirname "$0")/lib.sh"
SOCKET=/run/systemd/journal/socket
PY=python3
JOURNAL_PID=""
MADE_DIRS=""
scenario_cleanup() {
    if [ -n "$JOURNAL_PID" ]; then
        kill "$JOURNAL_PID" 2>/dev/null; wait "$JOURNAL_PID" 2>/dev/null
        rm -f "$SOCKET"
        [ -n "$MADE_DIRS" ] && rmdir "$MADE_DIRS" 2>/dev/null
    fi
}

"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS" >/dev/null || { fail "init"; finish; }
head -c $((2 << 20)) /dev/zero | tr '\0' 'x' > "$DEV/daemon.log"
check "mount" "$DPFS" mount "$DEV" "$MNT"
expect_eq "a daemon.log past 1 MiB became daemon.log.1" "$(stat -c %s "$DEV/daemon.log.1")" "$((2 << 20))"
check "and the new daemon.log is the mount's" grep -q "mounted $DEV on $MNT" "$DEV/daemon.log"
check "with its level" grep -q "info dpfs" "$DEV/daemon.log"
check "unmount" "$DPFS" unmount "$MNT"
check_error "an unknown level is a usage error" "not 'loud'" "$DPFS" mount "$DEV" "$MNT" --log-level loud

if [ -e "$SOCKET" ]; then
    log "a journald runs here: the stand-in is not needed"
    check "mount" "$DPFS" mount "$DEV" "$MNT"
    check "the journal has the mount's line" within 30 sh -c \
        'journalctl -t dpfs "DPFS_MOUNTPOINT=$0" -o cat | grep -q "mounted"' "$MNT"
    check "unmount" "$DPFS" unmount "$MNT"
    finish
fi
[ -d /run/systemd/journal ] || { MADE_DIRS=/run/systemd/journal; mkdir -p /run/systemd/journal || { fail "/run/systemd/journal can be made"; finish; }; }
$PY - "$SOCKET" "$WORK/journal" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
with open(sys.argv[2], "ab", buffering=0) as out:
    while True:
        out.write(s.recv(65536) + b"\n--\n")
PY
JOURNAL_PID=$!
within 30 test -S "$SOCKET" && pass "a stand-in journal listens on journald's socket" || { fail "a stand-in journal listens"; finish; }

check "mount" "$DPFS" mount "$DEV" "$MNT"
entry() { grep -q "MESSAGE=mounted $DEV on $MNT" "$WORK/journal"; }
within 30 entry && pass "the journal has the mount's line" || fail "the journal has the mount's line" "$(cat "$WORK/journal")"
record=$(awk -v RS='\n--\n' -v want="MESSAGE=mounted $DEV on $MNT" 'index($0, want)' "$WORK/journal")
for field in "PRIORITY=6" "SYSLOG_IDENTIFIER=dpfs" "DPFS_DEVICE=$DEV" "DPFS_MOUNTPOINT=$MNT"; do
    case "$record" in *"$field"*) pass "with $field" ;; *) fail "with $field" "$record" ;; esac
done
check "unmount" "$DPFS" unmount "$MNT"

: > "$WORK/journal"
lines=$(wc -l < "$DEV/daemon.log")
check "mount --log-level warning" "$DPFS" mount "$DEV" "$MNT" --log-level warning
check "unmount" "$DPFS" unmount "$MNT"
check_fails "an info line is not logged" grep -q "MESSAGE=mounted" "$WORK/journal"
check_fails "nor written to daemon.log" grep -q "mounted $DEV on $MNT" <(tail -n +$((lines + 1)) "$DEV/daemon.log")

finish
