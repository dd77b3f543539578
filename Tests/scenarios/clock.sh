#!/usr/bin/env bash
# The device's clock (dpfs clock advance): a grace period of an hour ends, a passcode
# delay passes and a device locked for 72 hours restarts (iOS 18's inactivity reboot),
# each in a second, and what is not yet due does not happen.
source "$(dirname "$0")/lib.sh"

MOUNT_ARGS="--grace-period 3600" setup_device --default-protection complete
check "unlock" unlock_device
echo "secret" > "$MNT/Documents/note.txt"
check "lock, with an hour's grace period" "$DPFS" lock "$MNT"
expect_eq "locking" "$(state_of)" locking
check "the clock moves 59 minutes" "$DPFS" clock advance "$MNT" 59m
expect_eq "still locking" "$(state_of)" locking
check "and one more" "$DPFS" clock advance "$MNT" 60s
expect_eq "the grace period has ended: locked" "$(state_of)" locked
check_fails "a complete file is unreadable" cat "$MNT/Documents/note.txt"
expect_eq "status says how far the clock moved" "$("$DPFS" status "$MNT" --json | json_field clockAdvanced)" "3600"
expect_eq "and so does its plain form" "$("$DPFS" status "$MNT" | sed -n 's/^clock advanced: //p')" "3600.0 s"

for i in 1 2 3 4 5; do
    printf '999%s\n' "$i" > "$WORK/wrong"; chmod 600 "$WORK/wrong"
    "$DPFS" unlock "$MNT" --passcode-file "$WORK/wrong" >/dev/null 2>&1
done
check_error "five failures: a minute's delay" "try again in" "$DPFS" unlock "$MNT" --passcode-file "$PASS"
check "the clock moves a minute" "$DPFS" clock advance "$MNT" 61s
check "the delay has passed: the passcode unlocks" unlock_device

check "lock now" "$DPFS" lock "$MNT" --now
expect_eq "the default inactivity reboot is 72 hours" "$("$DPFS" status "$MNT" --json | json_field inactivityRebootHours)" "72"
check "locked for 71 hours" "$DPFS" clock advance "$MNT" 2d23h
expect_eq "still locked" "$(state_of)" locked
check "and one more" "$DPFS" clock advance "$MNT" 1h
expect_eq "the device restarted: before first unlock" "$(state_of)" beforeFirstUnlock
check "the passcode unlocks it" unlock_device
check "its files are back" grep -q secret "$MNT/Documents/note.txt"
check "an unlocked device never restarts" "$DPFS" clock advance "$MNT" 10d
expect_eq "still unlocked" "$(state_of)" unlocked

check_error "a duration that is not one is a usage error" "is not a duration" "$DPFS" clock advance "$MNT" soon
check_error "the clock does not go back" "is not a duration" "$DPFS" clock advance "$MNT" -- -1h
check "unmount" "$DPFS" unmount "$MNT"

MOUNT_ARGS="--inactivity-reboot 0" mount_device
check "unlock" unlock_device
check "lock now" "$DPFS" lock "$MNT" --now
check "a week passes" "$DPFS" clock advance "$MNT" 7d
expect_eq "--inactivity-reboot 0: still locked" "$(state_of)" locked

# A delay begun while the clock was a week ahead is a minute, not a week and a minute,
# once the next mount has put the clock back to real time.
for i in 1 2 3 4 5; do
    printf '888%s\n' "$i" > "$WORK/wrong"; chmod 600 "$WORK/wrong"
    "$DPFS" unlock "$MNT" --passcode-file "$WORK/wrong" >/dev/null 2>&1
done
check "unmount" "$DPFS" unmount "$MNT"
mount_device
wait_left=$("$DPFS" status "$MNT" --json | json_field retryAfter)
[ -n "$wait_left" ] && [ "$wait_left" -ge 1 ] && [ "$wait_left" -le 60 ] \
    && pass "after the remount the delay is at most its minute ($wait_left s)" \
    || fail "after the remount the delay is at most its minute" "retryAfter: $wait_left"
retry_below() { local left; left=$("$DPFS" status "$MNT" --json | json_field retryAfter); [ -z "$left" ] || [ "$left" -lt "$1" ]; }
check "and runs down" within 30 retry_below "${wait_left:-0}"

finish
