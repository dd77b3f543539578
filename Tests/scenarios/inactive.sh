#!/usr/bin/env bash
# completeWhenUserInactive (iOS 17): a file of the class reads after the first unlock,
# also while locked, until the device has stayed locked for the user-inactive period
# (mount --user-inactive-period, default 24 h); then it is unreadable, open handles
# included, until the next unlock. The clock is moved with `dpfs clock advance`.
source "$(dirname "$0")/lib.sh"
READER=""
scenario_cleanup() { [ -n "$READER" ] && kill "$READER" 2>/dev/null; }
class_available() { "$DPFS" status "$MNT" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["classes"]["completeWhenUserInactive"])'; }

setup_device
expect_eq "before first unlock: the class is unavailable" "$(class_available)" False
check "unlock" unlock_device
expect_eq "unlocked: the class is available" "$(class_available)" True
expect_eq "status names the default user-inactive period, 24 h" \
    "$("$DPFS" status "$MNT" --json | json_field userInactivePeriodHours)" "24"
check "status prints it" sh -c "'$DPFS' status '$MNT' | grep -q 'user-inactive period: 24'"

echo "overnight sync state" > "$MNT/Documents/sync.db"
echo "after first unlock" > "$MNT/Documents/c.txt"
mkdir "$MNT/Documents/w"
check "dpfs protection set completeWhenUserInactive" \
    "$DPFS" protection set completeWhenUserInactive "$MNT/Documents/sync.db"
expect_eq "the xattr names the class" \
    "$(getfattr --only-values -n user.dpfs.protection "$MNT/Documents/sync.db" 2>/dev/null)" completeWhenUserInactive
check "Foundation's constant name is accepted" \
    setfattr -n user.dpfs.protection -v NSFileProtectionCompleteWhenUserInactive "$MNT/Documents/w"
expect_eq "a directory of the class" \
    "$(getfattr --only-values -n user.dpfs.protection "$MNT/Documents/w" 2>/dev/null)" completeWhenUserInactive
echo "inherited" > "$MNT/Documents/w/child"
expect_eq "its new file inherits it" \
    "$(getfattr --only-values -n user.dpfs.protection "$MNT/Documents/w/child" 2>/dev/null)" completeWhenUserInactive
expect_eq "dpfs protection get" "$("$DPFS" protection get "$MNT/Documents/sync.db" | awk '{print $NF}')" completeWhenUserInactive

# A handle opened before the expiry, held by a reader that reads the file again on
# each line from the test (a pipe keeps it alive without a fixed sleep).
mkfifo "$WORK/cmd"
python3 -u - "$MNT/Documents/sync.db" "$WORK/cmd" > "$WORK/reader.out" 2>&1 <<'EOF' &
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for line in open(sys.argv[2]):
    try:
        print("read:", os.pread(fd, 64, 0).decode().strip())
    except OSError as error:
        print("error:", error.errno)
EOF
READER=$!
exec 7>"$WORK/cmd"
echo go >&7
within 10 grep -q "read: overnight" "$WORK/reader.out" || fail "the reader started" "$(cat "$WORK/reader.out")"

check "lock now" "$DPFS" lock "$MNT" --now
expect_eq "locked" "$(state_of)" locked
check "locked: a completeWhenUserInactive file still reads" grep -q overnight "$MNT/Documents/sync.db"
check "locked: a new one can be made" sh -c "echo new > '$MNT/Documents/w/made-locked'"
check "23 hours pass" "$DPFS" clock advance "$MNT" 23h
check "locked 23 h: it still reads" grep -q overnight "$MNT/Documents/sync.db"
expect_eq "still available" "$(class_available)" True
check "and one more hour" "$DPFS" clock advance "$MNT" 1h
expect_eq "locked 24 h: the class has expired" "$(class_available)" False
expect_eq "the device is still locked, not restarted" "$(state_of)" locked
check_error "the file is unreadable (EPERM)" "Operation not permitted" cat "$MNT/Documents/sync.db"
check_fails "no new file of the class" sh -c "echo x > '$MNT/Documents/w/after-expiry'"
echo go >&7
if within 10 grep -q "error: 1" "$WORK/reader.out"; then pass "a handle opened before the expiry reads EPERM"
else fail "a handle opened before the expiry reads EPERM" "$(cat "$WORK/reader.out")"; fi
check "untilFirstAuth files still read" grep -q "after first unlock" "$MNT/Documents/c.txt"
check "names and stat still work" stat "$MNT/Documents/sync.db"

check "unlock" unlock_device
check "unlocked: it reads again" grep -q overnight "$MNT/Documents/sync.db"
echo go >&7
if within 10 sh -c "grep -c 'read: overnight' '$WORK/reader.out' | grep -qx 2"; then pass "the old handle reads again after unlock"
else fail "the old handle reads again after unlock" "$(cat "$WORK/reader.out")"; fi
exec 7>&-
wait "$READER"
READER=""

check "unmount" "$DPFS" unmount "$MNT"
MOUNT_ARGS="--user-inactive-period 2" mount_device
check "unlock" unlock_device
expect_eq "--user-inactive-period 2" "$("$DPFS" status "$MNT" --json | json_field userInactivePeriodHours)" "2"
check "lock now" "$DPFS" lock "$MNT" --now
check "two hours pass" "$DPFS" clock advance "$MNT" 2h
check_error "expired after 2 h" "Operation not permitted" cat "$MNT/Documents/sync.db"
check "restart" "$DPFS" restart "$MNT"
check_error "before first unlock: unreadable" "Operation not permitted" cat "$MNT/Documents/sync.db"
check "unlock" unlock_device
check "reads after the unlock" grep -q overnight "$MNT/Documents/sync.db"
check_error "a period that is not positive is refused" "user-inactive-period" \
    "$DPFS" mount "$DEV" "$WORK" --user-inactive-period 0
check "unmount" "$DPFS" unmount "$MNT"
check "fsck with the passcode opens every completeWhenUserInactive file" "$DPFS" fsck "$DEV" --passcode-file "$PASS"

finish
