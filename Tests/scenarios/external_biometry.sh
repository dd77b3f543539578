#!/usr/bin/env bash
# An outside package of ordinary Apple-platform code that keeps a token behind Face ID
# (Tests/AppleBiometricWrapper: SecAccessControl, LAContext, depending on dpfs by path
# for its Security and LocalAuthentication products) builds unchanged on Linux, and its
# own XCTest suite, which plays the user through DeviceControl, passes inside
# `dpfs run --device-control` on a mounted device. Without --device-control the tests
# may not answer for the user. The fixture builds into $FIXTURE_SCRATCH (default
# .build-fixture/ at the package root, git-ignored), beside external_package.sh's
# fixture: what both build of dpfs and its dependencies (swift-crypto's BoringSSL
# among them) is built once, and later runs reuse it.
source "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FIXTURE="$ROOT/Tests/AppleBiometricWrapper"
SCRATCH=${FIXTURE_SCRATCH:-$ROOT/.build-fixture}
fixture() { swift "$1" --package-path "$FIXTURE" --scratch-path "$SCRATCH" "${@:2}"; }
fixture_test() { "$DPFS" run "$MNT" "$@" -- swift test --package-path "$FIXTURE" --scratch-path "$SCRATCH" --skip-build; }

if grep -rq 'os(Linux)' "$FIXTURE/Sources" "$FIXTURE/Tests"; then
    fail "the fixture has no #if os(Linux)"
else
    pass "the fixture has no #if os(Linux)"
fi
check "the fixture builds against Security and LocalAuthentication" fixture build --build-tests
bundle="$SCRATCH/debug/AppleBiometricWrapperPackageTests.xctest"
if [ ! -e "$bundle" ]; then
    fail "the fixture's test bundle is built" "$bundle is missing"
elif heavy=$(ldd "$bundle" | grep -E 'libsodium|libsqlite3|libtss2|libfuse'); then
    fail "an app linking Security and LocalAuthentication links no libsodium, SQLite, tpm2-tss or FUSE" "$heavy"
else
    pass "an app linking Security and LocalAuthentication links no libsodium, SQLite, tpm2-tss or FUSE"
fi

setup_device
check "unlock" unlock_device

# Answers a run that failed before its prompts came would leave: the tests' setUp
# clears them, or the first prompt would take this stranger's face.
check "a stale answer is queued" "$DPFS" biometry respond "$MNT" nomatch --times 2
out=$(fixture_test --device-control 2>&1)
if printf '%s' "$out" | grep -q "Executed 5 tests, with 0 failures"; then
    pass "the vault's tests pass, the user played by the test"
else
    fail "the vault's tests pass, the user played by the test" "$(printf '%s' "$out" | grep -E 'error|failed' | head -5)"
fi
expect_eq "no answer is left queued" \
    "$("$DPFS" biometry status "$MNT" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["queued"])')" "0"

out=$(fixture_test 2>&1)
if printf '%s' "$out" | grep -q "may not act as the device's user"; then
    pass "without --device-control the tests may not answer for the user"
else
    fail "without --device-control the tests may not answer for the user" "$(printf '%s' "$out" | tail -3)"
fi

finish
