#!/usr/bin/env bash
# The Secure Enclave signing-key example (Sources/Examples/SecureEnclaveSigningKey)
# against a real device: the key is made on the first run and found again by its tag
# on the next (the same public key), signs a challenge the public key verifies, cannot
# be exported, cannot be found or used while the device is locked, and is there again
# after a restart and unlock. The key's private scalar never appears in the device
# directory in clear. A second key, made behind Face ID ([.privateKeyUsage,
# .biometryCurrentSet]), asks the simulated user at each signature: the answer queued
# with `dpfs biometry respond` decides, and re-enrollment invalidates the key.
source "$(dirname "$0")/lib.sh"

EXAMPLES=${EXAMPLES:-$(dirname "$DPFS")}
EXAMPLE="$EXAMPLES/ExampleSecureEnclaveSigningKey"
[ -x "$EXAMPLE" ] || { fail "ExampleSecureEnclaveSigningKey is built in $EXAMPLES"; finish; }

# run_example [ARG...]: runs it inside `dpfs run`; prints its output; fails unless every call answered as on iOS.
run_example() {
    local out
    out=$("$DPFS" run "$MNT" -- "$EXAMPLE" "$@" 2>&1)
    printf '%s\n' "$out"
    printf '%s' "$out" | grep -q "every call answered as on iOS"
}

public_key_of() { printf '%s' "$1" | sed -n 's/^public key \([0-9a-f]*\)$/\1/p'; }

setup_device
check "unlock" unlock_device

first=$(run_example) && pass "first run: the key is made, signs, and cannot be exported" \
    || fail "first run answers as iOS" "$(printf '%s' "$first" | grep -v '^ok' | head -5)"
printf '%s' "$first" | grep -q "ok   SecKeyCreateRandomKey" && pass "the first run made the key" \
    || fail "the first run made the key"
second=$(run_example) && pass "second run answers as iOS" \
    || fail "second run answers as iOS" "$(printf '%s' "$second" | grep -v '^ok' | head -5)"
printf '%s' "$second" | grep -q "SecKeyCreateRandomKey" && fail "the second run finds the key, makes none" \
    || pass "the second run finds the key, makes none"
key=$(public_key_of "$first")
[ ${#key} -eq 130 ] && pass "the public key is X9.63 (65 bytes)" || fail "the public key is X9.63 (65 bytes)" "got '$key'"
expect_eq "the key found by tag is the key made" "$(public_key_of "$second")" "$key"

check "lock --now" "$DPFS" lock "$MNT" --now
locked=$(run_example --locked) && pass "locked: the WhenUnlocked key cannot be found (errSecInteractionNotAllowed)" \
    || fail "locked run answers as iOS" "$(printf '%s' "$locked" | head -5)"
if run_example >/dev/null; then fail "the unlocked flow fails while locked"; else pass "the unlocked flow fails while locked"; fi

check "restart" "$DPFS" restart "$MNT"
check "unlock after restart" unlock_device
third=$(run_example) && pass "after restart and unlock the key signs again" \
    || fail "after restart and unlock the key signs again" "$(printf '%s' "$third" | grep -v '^ok' | head -5)"
expect_eq "it is still the same key" "$(public_key_of "$third")" "$key"

# A payment-approval key behind Face ID: found without asking, each signature asks.
bio() { "$DPFS" biometry status "$MNT" --json | json_field "$1"; }
# approve ANSWER EXPECTED: queues ANSWER (none for "-"), runs the example expecting EXPECTED.
approve() {
    [ "$1" = - ] || "$DPFS" biometry respond "$MNT" "$1" >/dev/null || return 1
    run_example --approve "$2"
}
public_approval_key_of() { printf '%s' "$1" | sed -n 's/^approval key \([0-9a-f]*\)$/\1/p'; }
check "enroll Face ID" "$DPFS" biometry enroll "$MNT" --type faceID
approved=$(approve match match) && pass "the approval key is made without a prompt and signs on a match" \
    || fail "the approval key is made without a prompt and signs on a match" "$(printf '%s' "$approved" | grep -v '^ok' | head -5)"
printf '%s' "$approved" | grep -q "ok   SecKeyCreateRandomKey" && pass "that run made the approval key" \
    || fail "that run made the approval key"
approval_key=$(public_approval_key_of "$approved")
expect_eq "the match was taken" "$(bio queued)" "0"
out=$(approve nomatch nomatch) && pass "a stranger's face: errSecAuthFailed" \
    || fail "a stranger's face: errSecAuthFailed" "$(printf '%s' "$out" | grep -v '^ok' | head -5)"
if approve nomatch match >/dev/null; then fail "a stranger's face approves nothing"
else pass "a stranger's face approves nothing"; fi
out=$(approve cancel cancel) && pass "the user cancels: errSecUserCanceled" \
    || fail "the user cancels: errSecUserCanceled" "$(printf '%s' "$out" | grep -v '^ok' | head -5)"
again=$(approve match match) && pass "found again by tag, it signs on a match" \
    || fail "found again by tag, it signs on a match" "$(printf '%s' "$again" | grep -v '^ok' | head -5)"
expect_eq "the key found is the key made" "$(public_approval_key_of "$again")" "$approval_key"
# The device key (no access control) signs with no answer queued, as before.
device_key=$(run_example) && pass "the key without access control asks nothing" \
    || fail "the key without access control asks nothing" "$(printf '%s' "$device_key" | grep -v '^ok' | head -5)"
check "reenroll Face ID" "$DPFS" biometry reenroll "$MNT"
out=$(approve match reenrolled) && pass "after re-enrollment the approval key is invalid (errSecAuthFailed)" \
    || fail "after re-enrollment the approval key is invalid (errSecAuthFailed)" "$(printf '%s' "$out" | grep -v '^ok' | head -5)"
expect_eq "without asking: the match is still queued" "$(bio queued)" "1"

# The public key is stored only sealed too: no file of the device directory holds it.
check "unmount" "$DPFS" unmount "$MNT"
# shows_key DIR HEX: whether any file under DIR holds the key's X coordinate, raw or in hex.
shows_key() {
    python3 - "$1" "$2" <<'PY'
import os, sys
root, key = sys.argv[1], bytes.fromhex(sys.argv[2])
needles = [key[1:33], sys.argv[2][2:66].encode()]
for directory, _, files in os.walk(root):
    for name in files:
        try:
            data = open(os.path.join(directory, name), "rb").read()
        except OSError:
            continue
        if any(needle in data for needle in needles):
            sys.exit(0)
sys.exit(1)
PY
}
if shows_key "$DEV" "$key"; then fail "the device directory shows the key in clear"
else pass "the device directory shows no key in clear"; fi
if shows_key "$DEV" "$approval_key"; then fail "the device directory shows the approval key in clear"
else pass "the device directory shows no approval key in clear"; fi
finish
