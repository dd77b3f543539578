#!/usr/bin/env bash
# The README tour: init, mount (a boot), unlock, copy in, make complete, lock, refuse,
# status, restart, unmount.
source "$(dirname "$0")/lib.sh"

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

check "lock --now" "$DPFS" lock "$MNT" --now
expect_eq "locked after lock --now" "$(state_of)" "locked"
check_error "cat of a complete file is refused" "Operation not permitted" cat "$MNT/Documents/report.pdf"
check "ls still lists it" sh -c "ls -l '$MNT/Documents' | grep -q report.pdf"
expect_eq "stat still shows its size" "$(stat -c %s "$MNT/Documents/report.pdf")" "300000"

json=$("$DPFS" status "$MNT" --json)
for field in '"state":"locked"' '"complete":false' '"none":true' '"untilFirstAuth":true' \
             '"completeUnlessOpen":false' '"passcodeSet":true' '"failedAttempts":0'; do
    case "$json" in *"$field"*) pass "status --json has $field" ;; *) fail "status --json has $field" "$json" ;; esac
done

check "unlock again" unlock_device
check "readable after unlock" cmp "$WORK/report.pdf" "$MNT/Documents/report.pdf"

echo "survives" > "$MNT/Documents/ufa.txt"
check "restart" "$DPFS" restart "$MNT"
expect_eq "restart means beforeFirstUnlock" "$(state_of)" "beforeFirstUnlock"
check_error "untilFirstAuth is gone after restart" "Operation not permitted" cat "$MNT/Documents/ufa.txt"
check "unlock after restart" unlock_device
expect_eq "untilFirstAuth back after unlock" "$(cat "$MNT/Documents/ufa.txt")" "survives"

check "unmount" "$DPFS" unmount "$MNT"
grep -qs " $MNT fuse" /proc/mounts && fail "mount gone after unmount" || pass "mount gone after unmount"
check "remount (a boot)" "$DPFS" mount "$DEV" "$MNT"
expect_eq "remount boots before first unlock" "$(state_of)" "beforeFirstUnlock"
check "unlock after remount" unlock_device
check "content survives remount" cmp "$WORK/report.pdf" "$MNT/Documents/report.pdf"
finish
