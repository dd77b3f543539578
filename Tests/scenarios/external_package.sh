#!/usr/bin/env bash
# An outside package of ordinary Apple-platform keychain code (Tests/AppleKeychainWrapper,
# which depends on dpfs by path for its `Security` product) builds unchanged on Linux and
# its own XCTest suite passes inside `dpfs run` on a mounted device; after `dpfs lock --now` its
# WhenUnlocked read gets errSecInteractionNotAllowed, as on a locked iPhone.
# The fixture builds into $FIXTURE_SCRATCH (default .build-fixture/ at the package root,
# git-ignored) so that later runs reuse the build.
source "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FIXTURE="$ROOT/Tests/AppleKeychainWrapper"
SCRATCH=${FIXTURE_SCRATCH:-$ROOT/.build-fixture}
fixture() { swift "$1" --package-path "$FIXTURE" --scratch-path "$SCRATCH" "${@:2}"; }
# The test run as the app inside the sandbox, as a developer runs it.
fixture_test() { "$DPFS" run "$MNT" -- swift test --package-path "$FIXTURE" --scratch-path "$SCRATCH" --skip-build "$@"; }

if grep -rq 'os(Linux)' "$FIXTURE/Sources" "$FIXTURE/Tests"; then
    fail "the fixture has no #if os(Linux)"
else
    pass "the fixture has no #if os(Linux)"
fi
check "the fixture builds against Security" fixture build --build-tests
# The client library is lean: the test binary links none of the daemon's libraries.
bundle="$SCRATCH/debug/AppleKeychainWrapperPackageTests.xctest"
if [ ! -e "$bundle" ]; then
    fail "the fixture's test bundle is built" "$bundle is missing"
elif heavy=$(ldd "$bundle" | grep -E 'libsodium|libsqlite3|libtss2|libfuse'); then
    fail "an app linking only Security links no libsodium, SQLite, tpm2-tss or FUSE" "$heavy"
else
    pass "an app linking only Security links no libsodium, SQLite, tpm2-tss or FUSE"
fi

setup_device
check "unlock" unlock_device

out=$(fixture_test --filter KeychainWrapperTests 2>&1)
if printf '%s' "$out" | grep -q "Executed 4 tests, with 0 failures"; then
    pass "the fixture's tests pass on the unlocked device"
else
    fail "the fixture's tests pass on the unlocked device" "$(printf '%s' "$out" | grep -E 'error|failed' | head -5)"
fi

check "lock --now" "$DPFS" lock "$MNT" --now
out=$(KEYCHAIN_DEVICE_LOCKED=1 fixture_test --filter LockedDeviceTests 2>&1)
if printf '%s' "$out" | grep -q "testWhenUnlockedPasswordIsInteractionNotAllowed' passed"; then
    pass "locked: the wrapper's WhenUnlocked read is errSecInteractionNotAllowed"
else
    fail "locked: the wrapper's WhenUnlocked read is errSecInteractionNotAllowed" "$(printf '%s' "$out" | grep -E 'error|failed|skipped' | head -5)"
fi

check "unlock" unlock_device
out=$(KEYCHAIN_DEVICE_LOCKED=1 fixture_test --filter LockedDeviceTests 2>&1)
if printf '%s' "$out" | grep -q "testWhenUnlockedPasswordIsInteractionNotAllowed' failed"; then
    pass "unlocked: the same test fails, the read succeeds"
else
    fail "unlocked: the same test fails, the read succeeds" "$(printf '%s' "$out" | tail -3)"
fi

finish
