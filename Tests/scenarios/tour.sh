#!/usr/bin/env bash
# The README tour, in its order, with the files it makes: init, mount (a boot), unlock,
# copy in, make complete, events, lock, refuse, status, restart, passcode change, a
# keychain item, backup, restore into a new device, unmount; then a remount.
source "$(dirname "$0")/lib.sh"

NEW="$WORK/new.txt"
PASSWORD="$WORK/pw.txt"
NEWPHONE="$WORK/newphone"
printf '5678\n' > "$NEW"
printf 'a backup password\n' > "$PASSWORD"
chmod 600 "$NEW" "$PASSWORD"
subscriber=""
scenario_cleanup() {
    # dpfs events ends at the unmount; one left by a failed check is ended by its pid.
    if [ -n "$subscriber" ] && kill -0 "$subscriber" 2>/dev/null; then kill "$subscriber" 2>/dev/null; fi
}
gone() { ! kill -0 "$1" 2>/dev/null; }

setup_device
expect_eq "mount boots before first unlock" "$(state_of)" "beforeFirstUnlock"
check "unlock with the passcode on stdin" sh -c "'$DPFS' unlock '$MNT' < '$PASS'"
expect_eq "unlocked after unlock" "$(state_of)" "unlocked"

for d in Documents Library "Library/Caches" "Library/Application Support" "Library/Preferences" tmp; do
    [ -d "$MNT/$d" ] && pass "sandbox has $d/" || fail "sandbox has $d/"
done

head -c 300000 /dev/urandom > "$WORK/report.pdf"
check "cp a file in" cp "$WORK/report.pdf" "$MNT/Documents/"
check "content is byte-exact" cmp "$WORK/report.pdf" "$MNT/Documents/report.pdf"
expect_eq "default class is untilFirstAuth" \
    "$(getfattr --absolute-names --only-values -n user.dpfs.protection "$MNT/Documents/report.pdf" 2>/dev/null)" "untilFirstAuth"
check "setfattr makes it complete" setfattr -n user.dpfs.protection -v complete "$MNT/Documents/report.pdf"
expect_eq "dpfs protection get shows complete" "$("$DPFS" protection get "$MNT/Documents/report.pdf")" "complete"
check "still readable while unlocked" cmp "$WORK/report.pdf" "$MNT/Documents/report.pdf"

# As the README has it: events in the background, then the lock once it says it
# has subscribed.
"$DPFS" events "$MNT" > "$WORK/events.out" 2> "$WORK/events.err" &
subscriber=$!
check "dpfs events has subscribed" within 60 subscribed "$WORK/events.err"

check "lock --now" "$DPFS" lock "$MNT" --now
expect_eq "locked after lock --now" "$(state_of)" "locked"
check_error "cat of a complete file is refused" "Operation not permitted" cat "$MNT/Documents/report.pdf"
check "ls still lists it" sh -c "ls -l '$MNT/Documents' | grep -q report.pdf"
expect_eq "stat still shows its size" "$(stat -c %s "$MNT/Documents/report.pdf")" "300000"

json=$("$DPFS" status "$MNT" --json)
for field in '"state":"locked"' '"complete":false' '"none":true' '"untilFirstAuth":true' \
             '"completeUnlessOpen":false' '"completeWhenUserInactive":true' '"passcodeSet":true' \
             '"failedAttempts":0' '"gracePeriod":10' '"defaultProtection":"untilFirstAuth"'; do
    case "$json" in *"$field"*) pass "status --json has $field" ;; *) fail "status --json has $field" "$json" ;; esac
done

check "unlock again" unlock_device
check "readable after unlock" cmp "$WORK/report.pdf" "$MNT/Documents/report.pdf"

echo "survives" > "$MNT/Documents/ufa.txt"
check "restart" "$DPFS" restart "$MNT"
expect_eq "restart means beforeFirstUnlock" "$(state_of)" "beforeFirstUnlock"
check_error "untilFirstAuth is gone after restart" "Operation not permitted" cat "$MNT/Documents/ufa.txt"
check "unlock after restart" sh -c "'$DPFS' unlock '$MNT' < '$PASS'"
expect_eq "untilFirstAuth back after unlock" "$(cat "$MNT/Documents/ufa.txt")" "survives"

check "passcode change, the current one on stdin" \
    sh -c "'$DPFS' passcode change '$MNT' --new-passcode-file '$NEW' < '$PASS'"
check "keychain add from stdin" sh -c \
    "printf s3cret | '$DPFS' keychain add '$MNT' --service api.example.com --account alice --data-file -"
expect_eq "keychain find prints the data" \
    "$("$DPFS" keychain find "$MNT" --service api.example.com --account alice)" "s3cret"
check "backup" "$DPFS" backup "$MNT" --to "$WORK/phone.dpfsbackup" --password-file "$PASSWORD"
check "restore into a new device with the first passcode" "$DPFS" restore "$NEWPHONE" \
    --from "$WORK/phone.dpfsbackup" --password-file "$PASSWORD" --passcode-file "$PASS" \
    --secret-store "file:$SECRETS"

check "unmount" "$DPFS" unmount "$MNT"
grep -qs " $MNT fuse" /proc/mounts && fail "mount gone after unmount" || pass "mount gone after unmount"

# The events the README shows, in its order: lock --now says "locked" at once.
check "dpfs events ends at the unmount" within 30 gone "$subscriber"
wait "$subscriber"
expect_eq "with status 0" "$?" "0"
expect_eq "the events, in order" \
    "$(sed -n 's/.*"event":"\([a-zA-Z]*\)","state":"\([a-zA-Z]*\)".*/\1 \2/p' "$WORK/events.out" | paste -sd, -)" \
    "willBecomeUnavailable locked,didBecomeUnavailable locked,didBecomeAvailable unlocked,restart beforeFirstUnlock,didBecomeAvailable unlocked,passcodeChanged unlocked"

check "remount (a boot)" "$DPFS" mount "$DEV" "$MNT"
expect_eq "remount boots before first unlock" "$(state_of)" "beforeFirstUnlock"
check_fails "the old passcode no longer unlocks" unlock_device
check "the new passcode unlocks" "$DPFS" unlock "$MNT" --passcode-file "$NEW"
check "content survives remount" cmp "$WORK/report.pdf" "$MNT/Documents/report.pdf"
check "unmount again" "$DPFS" unmount "$MNT"

# The restored device: the file and the item, under the passcode given to restore.
check "the restored device mounts" "$DPFS" mount "$NEWPHONE" "$MNT"
check "and unlocks with the passcode given to restore" unlock_device
check "the file came across" cmp "$WORK/report.pdf" "$MNT/Documents/report.pdf"
expect_eq "with its class" "$("$DPFS" protection get "$MNT/Documents/report.pdf")" "complete"
expect_eq "and the item" \
    "$("$DPFS" keychain find "$MNT" --service api.example.com --account alice)" "s3cret"
finish
