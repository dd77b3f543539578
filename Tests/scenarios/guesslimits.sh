#!/usr/bin/env bash
# Issue 12: the guess limits hold in the release binary. DPFS_TEST_DELAY_SCALE is a
# debug-build test hook; a release build has no such code, so setting it changes
# nothing: the 5th failure still imposes the full minute. And a failure count cannot
# be reset by deleting or garbling keybag.seq: that counts as the worst case (dpfs(5)).
source "$(dirname "$0")/lib.sh"

json_field() { python3 -c 'import json,sys; v=json.load(sys.stdin).get(sys.argv[1]); print("" if v is None else v)' "$1"; }

hits=$(grep -c DPFS_TEST_DELAY_SCALE "$DPFS")
expect_eq "the release binary does not even contain the hook's name" "$hits" 0

export DPFS_TEST_DELAY_SCALE=0
setup_device
unlock_device
"$DPFS" lock "$MNT" --now

attempt() { printf 'wrong%s\n' "$1" > "$WORK/w"; "$DPFS" unlock "$MNT" --passcode-file "$WORK/w" 2>&1; }
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

# After five failures keybag.seq is deleted (then, on a fresh device, garbled); the
# remount must show the worst case — 9 failures, an hour to wait — never 0.
expect_worst_case() {
    local what=$1 reason=$2 json wait
    json=$("$DPFS" status "$MNT" --json)
    expect_eq "$what: status shows 9 failed attempts" "$(printf '%s' "$json" | json_field failedAttempts)" 9
    wait=$(printf '%s' "$json" | json_field retryAfter)
    if [ -n "$wait" ] && python3 -c "import sys; sys.exit(0 if 3500 < float('$wait') <= 3600 else 1)"; then
        pass "$what: an hour to wait ($wait s)"
    else
        fail "$what: an hour to wait" "$json"
    fi
    case "$(printf '%s' "$json" | json_field worstCaseReason)" in
        *"$reason"*) pass "$what: status says why" ;; *) fail "$what: status says why" "$json" ;; esac
    if grep -q "$reason.*counts as 9 failed attempts" "$DEV/daemon.log"; then pass "$what: one log line says so"
    else fail "$what: one log line says so" "$(tail -3 "$DEV/daemon.log")"; fi
    check_error "$what: even the right passcode waits" "try again in" unlock_device
    generation=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generation"])' "$DEV/keybag.json")
    expect_eq "$what: keybag.seq is rewritten" "$(cat "$DEV/keybag.seq" 2>&1)" "$generation"
}

"$DPFS" unmount "$MNT" || fail "unmount"
rm "$DEV/keybag.seq"
mount_device
expect_worst_case "keybag.seq deleted" "keybag.seq is missing"
"$DPFS" unmount "$MNT" || fail "unmount"
mount_device
json=$("$DPFS" status "$MNT" --json)
expect_eq "a second remount keeps the worst case" "$(printf '%s' "$json" | json_field failedAttempts)" 9

"$DPFS" unmount "$MNT" || fail "unmount"
rm -rf "$DEV"
setup_device
for i in 1 2 3 4 5; do attempt "$i" >/dev/null; done
"$DPFS" unmount "$MNT" || fail "unmount"
echo garbage > "$DEV/keybag.seq"
mount_device
expect_worst_case "keybag.seq garbled" "keybag.seq does not hold a generation number"
finish
