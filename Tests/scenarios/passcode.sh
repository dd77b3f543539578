#!/usr/bin/env bash
# Issue 3: passcode set/change/remove, failed-attempt delays, erase-after, events.
source "$(dirname "$0")/lib.sh"

printf 's3cr3t-PASS\n' > "$PASS"
printf 'n3w-PASS\n' > "$WORK/new"; chmod 600 "$WORK/new"
setup_device
unlock_device
"$DPFS" events "$MNT" > "$WORK/events1.jsonl" 2> "$WORK/err-events1" &
E1=$!
"$DPFS" events "$MNT" > "$WORK/events2.jsonl" 2> "$WORK/err-events2" &
E2=$!
trap 'kill $E1 $E2 2>/dev/null; cleanup' EXIT
check "two subscribers have subscribed" within 60 \
    bash -c "grep -q '^dpfs events: subscribed' '$WORK/err-events1' && grep -q '^dpfs events: subscribed' '$WORK/err-events2'"
D="$MNT/Documents"
echo "complete data" > "$D/c.txt"; setfattr -n user.dpfs.protection -v complete "$D/c.txt"
echo "ufa data" > "$D/u.txt"
sync
CB=$(backing "$D/c.txt")
sum_before=$(tail -c +513 "$CB" | sha256sum)

# A third subscriber that goes away early must not disturb the daemon or the others.
"$DPFS" events "$MNT" > /dev/null 2> "$WORK/err-events3" &
E3=$!
check "a third subscriber has subscribed" within 60 subscribed "$WORK/err-events3"
kill -9 $E3; wait $E3 2>/dev/null
check "passcode change" "$DPFS" passcode change "$MNT" --passcode-file "$PASS" --new-passcode-file "$WORK/new"
expect_eq "content ciphertext unchanged by a passcode change" "$(tail -c +513 "$CB" | sha256sum)" "$sum_before"
check "lock --now" "$DPFS" lock "$MNT" --now
check_error "the old passcode no longer unlocks" "wrong passcode" "$DPFS" unlock "$MNT" --passcode-file "$PASS"
check "the new passcode unlocks" "$DPFS" unlock "$MNT" --passcode-file "$WORK/new"
expect_eq "files readable after the change" "$(cat "$D/c.txt")" "complete data"
check_error "change with a wrong old passcode is refused" "wrong passcode" \
    "$DPFS" passcode change "$MNT" --passcode-file "$PASS" --new-passcode-file "$WORK/new"
: > "$WORK/empty"; chmod 600 "$WORK/empty"
check_error "an empty new passcode is refused" "empty" \
    "$DPFS" passcode change "$MNT" --passcode-file "$WORK/new" --new-passcode-file "$WORK/empty"
check_fails "set when a passcode exists is refused" "$DPFS" passcode set "$MNT" --new-passcode-file "$WORK/new"
check "the new passcode still works after refusals" sh -c "'$DPFS' lock '$MNT' --now && '$DPFS' unlock '$MNT' --passcode-file '$WORK/new'"

check "passcode remove" "$DPFS" passcode remove "$MNT" --passcode-file "$WORK/new"
json=$("$DPFS" status "$MNT" --json)
case "$json" in *'"passcodeSet":false'*'"untilFirstAuth":true'*|*'"untilFirstAuth":true'*'"passcodeSet":false'*) pass "no passcode: every class available" ;; *) fail "no passcode: every class available" "$json" ;; esac
"$DPFS" lock "$MNT" --now >/dev/null
expect_eq "without a passcode a lock keeps complete files readable" "$(cat "$D/c.txt")" "complete data"
check "restart without a passcode" "$DPFS" restart "$MNT"
expect_eq "without a passcode a restart keeps them readable too" "$(cat "$D/c.txt")" "complete data"
check_error "change with a made-up current passcode where none is set is refused" "no passcode is set" \
    "$DPFS" passcode change "$MNT" --passcode-file "$WORK/new" --new-passcode-file "$PASS"
case "$("$DPFS" status "$MNT" --json)" in *'"passcodeSet":false'*) pass "and sets none" ;; *) fail "and sets none" ;; esac
check "passcode set turns protection on" "$DPFS" passcode set "$MNT" --new-passcode-file "$PASS"
check "lock --now" "$DPFS" lock "$MNT" --now
check_error "protection is on again" "Operation not permitted" cat "$D/c.txt"
check "unlock with the passcode that was set" unlock_device

# Failed attempts: the iOS delays (real table: after the 5th failure, 1 minute).
for i in 1 2 3 4; do printf 'wrong%s\n' "$i" > "$WORK/w$i"; chmod 600 "$WORK/w$i"; "$DPFS" unlock "$MNT" --passcode-file "$WORK/w$i" 2>/dev/null; done
"$DPFS" unlock "$MNT" --passcode-file "$WORK/w4" 2>/dev/null
expect_eq "the same wrong passcode twice counts once" "$("$DPFS" status "$MNT" --json | sed -n 's/.*"failedAttempts":\([0-9]*\).*/\1/p')" "4"
printf 'wrong5\n' > "$WORK/w5"; chmod 600 "$WORK/w5"
"$DPFS" unlock "$MNT" --passcode-file "$WORK/w5" 2> "$WORK/err5"
grep -q "try again in 1 min" "$WORK/err5" && pass "the 5th failure imposes 1 minute" || fail "the 5th failure imposes 1 minute" "$(cat "$WORK/err5")"
check_error "an attempt during the delay is refused and says how long" "try again in" unlock_device
json=$("$DPFS" status "$MNT" --json)
case "$json" in *'"failedAttempts":5'*) pass "status shows failedAttempts 5" ;; *) fail "status shows failedAttempts 5" "$json" ;; esac
case "$json" in *'"retryAfter":5'[0-9]*|*'"retryAfter":60'*) pass "status shows retryAfter ≈ 60 s" ;; *) fail "status shows retryAfter ≈ 60 s" "$json" ;; esac
check "unmount" "$DPFS" unmount "$MNT"
check "remount" "$DPFS" mount "$DEV" "$MNT"
json=$("$DPFS" status "$MNT" --json)
case "$json" in *'"failedAttempts":5'*'"retryAfter"'*|*'"retryAfter"'*'"failedAttempts":5'*) pass "the counter and the delay survive a remount" ;; *) fail "the counter and the delay survive a remount" "$json" ;; esac
check_error "still refused after the remount" "try again in" unlock_device

kill $E1 $E2 2>/dev/null; wait $E1 $E2 2>/dev/null
for f in "$WORK/events1.jsonl" "$WORK/events2.jsonl"; do
    for e in passcodeChanged attemptFailed didBecomeUnavailable didBecomeAvailable restart; do
        grep -q "\"event\":\"$e\"" "$f" && pass "$(basename "$f"): $e" || fail "$(basename "$f"): $e"
    done
done
if grep -rqa -e 's3cr3t-PASS' -e 'n3w-PASS' "$WORK"/events*.jsonl "$DEV/daemon.log" "$DEV/keybag.json" "$WORK"/err*; then
    fail "the passcode never appears in events, logs, errors or the keybag"
else
    pass "the passcode never appears in events, logs, errors or the keybag"
fi
finish
