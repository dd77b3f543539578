#!/usr/bin/env bash
# The biometry-gated token example (Sources/Examples/BiometryGatedToken) against a real
# device: it plays the user through DeviceControl under `dpfs run --device-control`, and
# every SecItem and LAContext call must answer as iOS does, or it exits 1. Without
# --device-control it may not act as the user. The example is found beside $DPFS (a
# `swift build` builds it) or in $EXAMPLES.
source "$(dirname "$0")/lib.sh"

EXAMPLES=${EXAMPLES:-$(dirname "$DPFS")}
EXAMPLE=$EXAMPLES/ExampleBiometryGatedToken
[ -x "$EXAMPLE" ] || { fail "ExampleBiometryGatedToken is built in $EXAMPLES"; finish; }

setup_device
check "unlock" unlock_device

out=$("$DPFS" run "$MNT" --device-control -- "$EXAMPLE" --passcode-file "$PASS" 2>&1)
if [ $? -eq 0 ] && printf '%s' "$out" | grep -q "every call answered as on iOS"; then
    pass "the biometry-gated token answers as iOS"
else
    fail "the biometry-gated token answers as iOS" "$(printf '%s' "$out" | grep -v '^ok' | head -5)"
fi
expect_eq "it left no answer queued" \
    "$("$DPFS" biometry status "$MNT" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["queued"])')" "0"

check_error "without --device-control the app may not act as the user" "device-control" \
    "$DPFS" run "$MNT" -- "$EXAMPLE" --passcode-file "$PASS"
finish
