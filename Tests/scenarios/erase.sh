#!/usr/bin/env bash
# Issue 3: the whole delay table (scaled down for the test) and --erase-after.
# The delay scale is a test hook that only a debug build has (dpfs(1), ENVIRONMENT),
# so this scenario runs the debug binary: DPFS_DEBUG, else the debug build beside
# the release one that DPFS names.
source "$(dirname "$0")/lib.sh"
require_debug_build
DPFS=$DEBUG
export DPFS_TEST_DELAY_SCALE=0.01   # 1 min → 0.6 s, 1 h → 36 s

setup_device --erase-after 6
unlock_device
echo "protected" > "$MNT/Documents/p.txt"
"$DPFS" lock "$MNT" --now

attempt() { printf 'wrong%s\n' "$1" > "$WORK/w"; chmod 600 "$WORK/w"; "$DPFS" unlock "$MNT" --passcode-file "$WORK/w" 2>&1; }
for i in 1 2 3 4; do
    out=$(attempt "$i")
    case "$out" in *"try again"*) fail "no delay after failure $i" "$out" ;; *) pass "no delay after failure $i" ;; esac
done
out=$(attempt 5)
case "$out" in *"try again in 1 s"*) pass "failure 5: 1 min × 0.01" ;; *) fail "failure 5: 1 min × 0.01" "$out" ;; esac
sleep 0.8
out=$(attempt 6)
case "$out" in *"erased"*) pass "the 6th failure erases (--erase-after 6)" ;; *) fail "the 6th failure erases" "$out" ;; esac
json=$("$DPFS" status "$MNT" --json)
case "$json" in *'"erased":true'*) pass "status says erased" ;; *) fail "status says erased" "$json" ;; esac
check_fails "the old passcode cannot bring the data back" unlock_device
check_fails "the protected file is unrecoverable" cat "$MNT/Documents/p.txt"
check "the sandbox stays usable" sh -c "echo fresh > '$MNT/Documents/new.txt' && cat '$MNT/Documents/new.txt'"
check "unmount" "$DPFS" unmount "$MNT"
check "the erased device mounts again" "$DPFS" mount "$DEV" "$MNT"
json=$("$DPFS" status "$MNT" --json)
case "$json" in *'"erased":true'*) pass "still says erased after remount" ;; *) fail "still says erased after remount" "$json" ;; esac
finish
