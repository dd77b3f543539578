#!/usr/bin/env bash
# Secure Enclave keys on a device whose secret store is a TPM (a software TPM, swtpm,
# started by the test on a free loopback port and stopped by its pid): the key is
# made and signs; a copy of the device directory beside another TPM does not even
# mount, so its key item is no use there; back on its own TPM the same key signs again.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/swtpm.bash"
EXAMPLE="${EXAMPLES:-$(dirname "$DPFS")}/ExampleSecureEnclaveSigningKey"
[ -x "$EXAMPLE" ] || { fail "ExampleSecureEnclaveSigningKey is built"; finish; }

public_key_of() { printf '%s' "$1" | sed -n 's/^public key \([0-9a-f]*\)$/\1/p'; }

start_swtpm "$WORK/tpm-a"
"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "tpm2:$TCTI" >/dev/null || { fail "init with tpm2"; finish; }
mount_device
check "unlock" unlock_device
if out=$("$DPFS" run "$MNT" -- "$EXAMPLE" 2>&1) && printf '%s' "$out" | grep -q "every call answered as on iOS"; then
    pass "a Secure Enclave key is made and signs on a tpm2 device"
else
    fail "a Secure Enclave key is made and signs on a tpm2 device" "$(printf '%s' "$out" | grep -v '^ok' | head -5)"
fi
key=$(public_key_of "$out")
check "unmount" "$DPFS" unmount "$MNT"

cp -a "$DEV" "$WORK/copy"
stop_swtpm
start_swtpm "$WORK/tpm-b"
check_error "a copy beside another TPM does not mount: its keys are no use there" \
    "secret store tpm2:$TCTI" "$DPFS" mount "$WORK/copy" "$MNT"
stop_swtpm

start_swtpm "$WORK/tpm-a"
mount_device
check "unlock on its own TPM" unlock_device
if out=$("$DPFS" run "$MNT" -- "$EXAMPLE" 2>&1) && printf '%s' "$out" | grep -q "every call answered as on iOS"; then
    pass "back on its own TPM the key is found and signs"
else
    fail "back on its own TPM the key is found and signs" "$(printf '%s' "$out" | grep -v '^ok' | head -5)"
fi
expect_eq "the same key" "$(public_key_of "$out")" "$key"
check "unmount" "$DPFS" unmount "$MNT"
finish
