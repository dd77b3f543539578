#!/usr/bin/env bash
# The grace period's deadline holds even while the lock cannot run yet. The wipe at the
# deadline waits for the lock-state's lock, which an unlock holds through its passcode
# check (a slow key derivation, a TPM): meanwhile a complete file opened before the
# lock keeps its key in the daemon. From the deadline on, it is refused all the same:
# a read through that open handle fails with EPERM, as a new open of it does, as both
# do once the wipe has run. A debug-build hook holds the unlock (DPFS_TEST_HOLD_UNLOCK).
source "$(dirname "$0")/lib.sh"
require_debug_build
expect_eq "the release binary does not even contain the hook's name" "$(grep -c DPFS_TEST_HOLD_UNLOCK "$DPFS")" 0
DPFS=$DEBUG
require_tools python3

HOLD="$WORK/let-unlock-go"
GRACE=8
export DPFS_TEST_HOLD_UNLOCK=$HOLD
MOUNT_ARGS="--grace-period $GRACE" setup_device
unset DPFS_TEST_HOLD_UNLOCK
touch "$HOLD"
unlock_device > /dev/null
rm -f "$HOLD" "$HOLD.held"
D="$MNT/Documents"
head -c 1048576 /dev/urandom > "$WORK/plain"
cp "$WORK/plain" "$D/c.bin"
setfattr -n user.dpfs.protection -v complete "$D/c.bin"

# A reader opens the file while unlocked, reads nothing yet (no page is cached), and
# reads its first 4 KiB when told to; it writes what came, or the error.
python3 - "$D/c.bin" "$WORK/go" "$WORK/read.out" "$WORK/opened" <<'PY' &
import os, sys, time
path, go, out, opened = sys.argv[1:]
fd = os.open(path, os.O_RDONLY)
# Written back, then dropped from the page cache: the read below must reach the daemon.
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
open(opened, "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
try:
    data = os.pread(fd, 4096, 0)
    open(out, "w").write("read %d bytes %s\n" % (len(data), data[:16].hex()))
except OSError as error:
    open(out, "w").write("error %s\n" % error.strerror)
PY
reader=$!
unlocker=""
scenario_cleanup() {
    touch "$HOLD"
    local pid
    for pid in $reader $unlocker; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    return 0
}
check "the reader opened the file while unlocked" within 60 test -e "$WORK/opened"

"$DPFS" lock "$MNT" > /dev/null || fail "lock"
locked_at=$(python3 -c 'import time; print(time.monotonic())')
# An unlock during the grace period, held by the hook once its passcode is checked:
# it holds the lock-state's lock past the deadline, so the wipe cannot run.
"$DPFS" unlock "$MNT" --passcode-file "$PASS" > "$WORK/unlock.out" 2>&1 &
unlocker=$!
check "the unlock is held before the deadline" within "$GRACE" test -e "$HOLD.held"
# The daemon began its grace period before the lock command returned: once the grace
# period has passed since then, its deadline has.
past_deadline() { python3 -c 'import sys, time; sys.exit(0 if time.monotonic() > float(sys.argv[1]) + float(sys.argv[2]) + 0.5 else 1)' "$locked_at" "$GRACE"; }
check "the deadline passes" within 60 past_deadline
expect_eq "the device still reports locking (the wipe waits)" "$(state_of)" "locking"
touch "$WORK/go"
check "the reader is done" within 60 test -s "$WORK/read.out"
case $(cat "$WORK/read.out") in
    "error Operation not permitted") pass "a read through the handle opened before the lock is refused after the deadline" ;;
    *) fail "a read through the handle opened before the lock is refused after the deadline" "$(cat "$WORK/read.out")" ;;
esac
check_error "a new open of the same file is refused after the deadline" "Operation not permitted" head -c 1 "$D/c.bin"
touch "$HOLD"
wait "$unlocker"; status=$?; unlocker=""
wait "$reader" 2>/dev/null; reader=""
# The unlock, begun before the deadline, was checked before it and so comes first:
# the lock that was under way ends with the device unlocked, as an unlock during the
# grace period does.
expect_eq "the held unlock succeeds once let go" "$status" "0"
check "and the file reads again" cmp -s "$WORK/plain" "$D/c.bin"
finish
