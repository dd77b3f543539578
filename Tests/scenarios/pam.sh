#!/usr/bin/env bash
# Unlock at login: a PAM service of the test's own runs pam_exec with expose_authtok
# and Scripts/dist/dpfs-pam-unlock, pamtester logs in with the passcode as the
# password, and the device is unlocked; a wrong password leaves it locked.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
require_tools pamtester setpriv
SERVICE="dpfs-test-$$"
scenario_cleanup() { rm -f "/etc/pam.d/$SERVICE"; }
[ -w /etc/pam.d ] || { fail "/etc/pam.d is writable (the test runs as root)"; finish; }

# The helper finds dpfs beside it (../bin/dpfs): installed as Scripts/install would.
mkdir -p "$WORK/prefix/bin" "$WORK/prefix/sbin"
cp "$DPFS" "$WORK/prefix/bin/dpfs"
cp "$ROOT/Scripts/dist/dpfs-pam-unlock" "$WORK/prefix/sbin/"
cat > "/etc/pam.d/$SERVICE" <<EOF
auth    required  pam_exec.so expose_authtok quiet $WORK/prefix/sbin/dpfs-pam-unlock $MNT
account required  pam_permit.so
EOF

setup_device --default-protection complete
check "the device starts before first unlock" test "$(state_of)" = beforeFirstUnlock
user=$(id -un)
out=$(printf '9999\n' | pamtester "$SERVICE" "$user" authenticate 2>&1) \
    && fail "a wrong password fails the PAM module" "$out" || pass "a wrong password fails the PAM module"
expect_eq "and leaves the device locked" "$(state_of)" beforeFirstUnlock
check "the passcode as the login password" sh -c 'printf "1234\n" | pamtester "$0" "$1" authenticate' "$SERVICE" "$user"
expect_eq "unlocks the device" "$(state_of)" unlocked
echo "written after the login" > "$MNT/Documents/after.txt"
check "its complete files are readable" grep -q "after the login" "$MNT/Documents/after.txt"
check "lock" "$DPFS" lock "$MNT" --now
check "a login unlocks it again" sh -c 'printf "1234\n" | pamtester "$0" "$1" authenticate' "$SERVICE" "$user"
expect_eq "unlocked" "$(state_of)" unlocked

# With no mount there, the module fails (and with "optional" a login would go on).
check "unmount" "$DPFS" unmount "$MNT"
check_fails "no mount: the module fails" sh -c 'printf "1234\n" | pamtester "$0" "$1" authenticate' "$SERVICE" "$user"

finish
