#!/usr/bin/env bash
# Issue 12: the guess limits hold in the release binary. DPFS_TEST_DELAY_SCALE is a
# debug-build test hook; a release build has no such code, so setting it changes
# nothing: the 5th failure still imposes the full minute, and a remount keeps it.
# (An old copy of the keybag put back is refused: rollback.sh.)
source "$(dirname "$0")/lib.sh"


hits=$(grep -c DPFS_TEST_DELAY_SCALE "$DPFS")
expect_eq "the release binary does not even contain the hook's name" "$hits" 0

export DPFS_TEST_DELAY_SCALE=0
setup_device
unlock_device
"$DPFS" lock "$MNT" --now

attempt() { printf 'wrong%s\n' "$1" > "$WORK/w"; chmod 600 "$WORK/w"; "$DPFS" unlock "$MNT" --passcode-file "$WORK/w" 2>&1; }
for i in 1 2 3 4; do attempt "$i" >/dev/null; done
out=$(attempt 5)
case "$out" in *"try again in 1 min"*|*"try again in 59 s"*) pass "failure 5 imposes a full minute" ;;
    *) fail "failure 5 imposes a full minute" "$out" ;; esac
out=$(unlock_device 2>&1) && fail "the 6th attempt (the right passcode) is refused" "it unlocked" || {
    case "$out" in *"try again in 1 min"*|*"try again in 5"[0-9]" s"*) pass "the 6th attempt is refused with about a minute to wait" ;;
        *) fail "the 6th attempt is refused with about a minute to wait" "$out" ;; esac; }
json=$("$DPFS" status "$MNT" --json)
expect_eq "status: 5 failed attempts" "$(printf '%s' "$json" | json_field failedAttempts)" 5
wait=$(printf '%s' "$json" | json_field retryAfter)
if [ -n "$wait" ] && python3 -c "import sys; sys.exit(0 if 50 < float('$wait') <= 60 else 1)"; then
    pass "status: about a minute to wait ($wait s)"
else
    fail "status: about a minute to wait" "$json"
fi
expect_eq "state stays locked" "$(state_of)" locked

# The count and the wait survive a remount.
"$DPFS" unmount "$MNT" || fail "unmount"
mount_device
json=$("$DPFS" status "$MNT" --json)
expect_eq "a remount keeps 5 failed attempts" "$(printf '%s' "$json" | json_field failedAttempts)" 5
check_error "a remount keeps the wait" "try again in" unlock_device
finish
