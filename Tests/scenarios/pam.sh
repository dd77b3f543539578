#!/usr/bin/env bash
# Unlock at login: a PAM service of the test's own runs pam_exec with expose_authtok
# and Scripts/dist/dpfs-pam-unlock, pamtester logs in with the passcode as the
# password, and the device is unlocked; a wrong password leaves it locked. A tpm2
# device whose TPM (a swtpm the test starts) stops answering does not hold the login:
# the helper gives up after its bound, and the login goes on.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/swtpm.bash"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
require_tools pamtester setpriv
SERVICE="dpfs-test-$$"
scenario_cleanup() { rm -f "/etc/pam.d/$SERVICE" "/etc/pam.d/$SERVICE-optional"; stop_swtpm; }
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

# A TPM that stops answering (swtpm stopped by the test): as the PAM line of dpfs(1),
# with "optional", and a bound of 3 s instead of 30 for the test.
start_swtpm "$WORK/tpm"
rm -rf "$DEV"
"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "tpm2:$TCTI" >/dev/null || { fail "init with tpm2"; finish; }
mount_device
cat > "/etc/pam.d/$SERVICE-optional" <<EOF
auth    optional  pam_exec.so expose_authtok quiet log=$WORK/helper.log $WORK/prefix/sbin/dpfs-pam-unlock --timeout 3 $MNT
auth    required  pam_permit.so
account required  pam_permit.so
EOF
kill -STOP "$SWTPM_PID"
started=$SECONDS
check "the login goes on though the TPM does not answer" \
    timeout 90 sh -c 'printf "1234\n" | pamtester "$0" "$1" authenticate' "$SERVICE-optional" "$user"
check "within the helper's bound, not for ever" test $((SECONDS - started)) -lt 60
check "the helper says why it gave up" grep -q "gave up unlocking $MNT .* after 3 s" "$WORK/helper.log"
check_fails "no dpfs unlock is left waiting" pgrep -f "bin/dpfs unlock $MNT"
kill -CONT "$SWTPM_PID"
check "unmount" "$DPFS" unmount "$MNT"
stop_swtpm

finish
