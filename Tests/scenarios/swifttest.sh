#!/usr/bin/env bash
# `dpfs run MNT -- swift test` (and `dpfs test`) in every lock state, before the first
# unlock included: SwiftPM, the compilers and their caches, locks and temporary files
# stay outside the device (the package's .build, the caller's ~/.cache), and only the
# test bundle runs as the app inside the sandbox — its XCTest and swift-testing tests
# see the sandbox's HOME and TMPDIR and the device's lock state, and the app's ID as
# Bundle.main.bundleIdentifier, as a simulator's host app gives it (from an Info.plist
# dpfs writes beside the bundle, never over the developer's own). The device holds the
# same files, byte for byte the same size, before and after.
source "$(dirname "$0")/lib.sh"
require_tools swift

PKG="$WORK/pkg"
mkdir -p "$PKG/Sources/Feed" "$PKG/Tests/FeedTests"
cat > "$PKG/Package.swift" <<'SWIFT'
// swift-tools-version:6.0
import PackageDescription
let package = Package(name: "Feed", targets: [
    .target(name: "Feed"),
    .testTarget(name: "FeedTests", dependencies: ["Feed"]),
])
SWIFT
cat > "$PKG/Sources/Feed/Feed.swift" <<'SWIFT'
import Foundation
/// What the app's tests exercise: reading a file of the sandbox, as the app would.
public func readNote(_ name: String) -> String {
    let url = URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent("Documents/\(name)")
    do { return String(decoding: try Data(contentsOf: url), as: UTF8.self) } catch { return "unavailable" }
}
SWIFT
# EXPECT (passed through SwiftPM and dpfs run): the device's state the test should see;
# EXPECT_ID: the bundle ID.
cat > "$PKG/Tests/FeedTests/FeedTests.swift" <<'SWIFT'
import Feed
import Foundation
import Testing
import XCTest

let expected = ProcessInfo.processInfo.environment["EXPECT"] ?? "unset"
let mount = ProcessInfo.processInfo.environment["DPFS_MOUNT"] ?? "none"
let expectedID = ProcessInfo.processInfo.environment["EXPECT_ID"] ?? "unset"

final class SandboxTests: XCTestCase {
    func testRunsAsTheAppInTheSandbox() {
        if ProcessInfo.processInfo.environment["HOLD"] == "1" {  // a test a CI job's timeout ends
            FileManager.default.createFile(atPath: NSTemporaryDirectory() + "/holding", contents: nil)
            Thread.sleep(forTimeInterval: 600)
        }
        XCTAssertEqual(NSHomeDirectory(), mount)
        XCTAssertEqual(Bundle.main.bundleIdentifier, expectedID)
        XCTAssertTrue(NSTemporaryDirectory().hasPrefix(mount + "/tmp"), NSTemporaryDirectory())
        let early = readNote("early.txt"), diary = readNote("diary.txt")
        switch expected {
        case "beforeFirstUnlock": XCTAssertEqual([early, diary], ["unavailable", "unavailable"])
        case "locked": XCTAssertEqual([early, diary], ["after first unlock\n", "unavailable"])
        case "unlocked": XCTAssertEqual([early, diary], ["after first unlock\n", "dear diary\n"])
        default: XCTFail("EXPECT is \(expected)")
        }
        print("xctest saw \(expected)")
    }

    func testBundleIdentifierIsTheApps() {
        XCTAssertEqual(Bundle.main.bundleIdentifier, expectedID)
        print("xctest bundle id: \(Bundle.main.bundleIdentifier ?? "nil")")
    }
}

@Test func bundleIdentifierIsTheApps() {
    #expect(Bundle.main.bundleIdentifier == expectedID)
    print("swift-testing bundle id: \(Bundle.main.bundleIdentifier ?? "nil")")
}

@Test func swiftTestingRunsInTheSandboxToo() {
    #expect(NSHomeDirectory() == mount)
    #expect(Bundle.main.bundleIdentifier == expectedID)
    #expect((readNote("early.txt") == "unavailable") == (expected == "beforeFirstUnlock"))
    print("swift-testing saw \(expected)")
}
SWIFT

setup_device
APP=$("$DPFS" status "$MNT" --json | json_field app)
export EXPECT_ID=$APP
check "unlock" unlock_device
echo "after first unlock" > "$MNT/Documents/early.txt"
check "a complete diary" sh -c "echo 'dear diary' > '$MNT/Documents/diary.txt' && '$DPFS' protection set complete '$MNT/Documents/diary.txt'"
check "restart: before first unlock" "$DPFS" restart "$MNT"
check "dpfs run makes its .containers once" "$DPFS" run "$MNT" -- true
device_files() { find "$MNT" -printf '%P %s\n' | sort; }
before=$(device_files)
before_du=$(du -s --apparent-size "$MNT" | cut -f1)

run_tests() {  # run_tests STATE COMMAND...: the suite passes, seeing STATE
    local state=$1; shift
    local out rc
    out=$(EXPECT=$state "$@" 2>&1); rc=$?
    # --parallel shows no XCTest output of a passing test, only its name.
    if [ "$rc" -eq 0 ] && { grep -q "xctest saw $state" <<<"$out" && grep -q "Executed 2 tests, with 0 failures" <<<"$out" \
            || grep -q "Testing FeedTests.SandboxTests/testRunsAsTheAppInTheSandbox" <<<"$out"; } \
        && grep -q "swift-testing saw $state" <<<"$out" && grep -Eq "Test run with 2 tests.* passed" <<<"$out"; then
        pass "$state: the suite passes inside the sandbox"
    else
        fail "$state: the suite passes inside the sandbox" "exit $rc: $(grep -E 'error|fail|Fail' <<<"$out" | head -5)"
    fi
}
run_tests beforeFirstUnlock "$DPFS" run "$MNT" -- swift test --package-path "$PKG"
check "the build is the package's, outside the device" test -d "$PKG/.build/debug"
check "unlock" unlock_device
run_tests unlocked "$DPFS" run "$MNT" -- swift test --package-path "$PKG"

# A CI job's timeout ends dpfs test with SIGTERM, and SwiftPM does not pass it on to the
# test runner it started: nothing of the tests may go on running as the app.
app_runs() { "$DPFS" status "$MNT" --json | python3 -c 'import json,sys; print(" ".join(str(r["pid"]) for r in json.load(sys.stdin).get("runs", [])))'; }
HOLD=1 EXPECT=unlocked "$DPFS" test "$MNT" -- --package-path "$PKG" --skip-build >"$WORK/held.out" 2>&1 &
held=$!
holding() { find "$MNT/tmp" -name holding | grep -q .; }
if within 120 holding; then
    pass "a held test runs"
    kill -TERM "$held"
    if within 60 sh -c "! kill -0 $held"; then pass "SIGTERM ends dpfs test"; else fail "SIGTERM ends dpfs test"; kill -KILL "$held"; fi
    left=$(app_runs)
    expect_eq "no app run of the ended test holds the mount" "$left" ""
    [ -z "$left" ] || kill -KILL $left  # the old behaviour: the runs this scenario started
else
    fail "a held test runs" "$(tail -5 "$WORK/held.out")"; kill -TERM "$held"
fi
wait "$held" 2>/dev/null
find "$MNT/tmp" -name holding -delete
check "lock --now" "$DPFS" lock "$MNT" --now
run_tests locked "$DPFS" run "$MNT" -- swift test --package-path "$PKG"
run_tests locked "$DPFS" test "$MNT" -- --package-path "$PKG"
check "restart" "$DPFS" restart "$MNT"
run_tests beforeFirstUnlock "$DPFS" test "$MNT" -- --package-path "$PKG" --parallel

expect_eq "no tool cache, lock or temporary file was left in the device" "$(device_files)" "$before"
expect_eq "du of the mount is the same" "$(du -s --apparent-size "$MNT" | cut -f1)" "$before_du"
# A dpfs test killed outright (SIGKILL) leaves its toolset directory: the next run
# removes every such leftover of an ended run, and nothing else.
TOOLSETS="$WORK/toolsets"
mkdir -m 700 "$TOOLSETS"
alive=""; holder=""
scenario_cleanup() {
    local pid
    for pid in $alive $holder; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    return 0
}
sleep 600 & alive=$!
sh -c 'exit 0' & gone=$!; wait "$gone"
leftover() { mkdir -m 700 "$TOOLSETS/$1" && echo '{}' > "$TOOLSETS/$1/dpfs-toolset.json"; }
leftover "dpfs-test-$gone.AbC123"                        # killed before its lock: its pid is gone
leftover "dpfs-test-$alive.DeF456"; touch "$TOOLSETS/dpfs-test-$alive.DeF456/lock"  # its lock is free
leftover "dpfs-test-$alive.GhI789"                       # being made: its pid lives
leftover "dpfs-test-$gone.JkL012"; touch "$TOOLSETS/dpfs-test-$gone.JkL012/lock"
# Its run lives (and its pid went to another process): the lock is held.
sh -c 'flock 9 && exec sleep 600' 9< "$TOOLSETS/dpfs-test-$gone.JkL012/lock" & holder=$!
leftover "dpfs-test.MnO345"                              # not the pattern
leftover "dpfs-test-$gone.PqR678x"
toolsets() { (cd "$TOOLSETS" && ls -d dpfs-test* | LC_ALL=C sort | tr '\n' ' '); }
locked() { ! flock -n "$TOOLSETS/dpfs-test-$gone.JkL012/lock" true; }
check "the lock of a living run is held" within 60 locked
run_tests beforeFirstUnlock env TMPDIR="$TOOLSETS" "$DPFS" test "$MNT" -- --package-path "$PKG" --skip-build
expect_eq "the leftovers of ended runs are removed, and the run's own" "$(toolsets)" \
    "dpfs-test-$alive.GhI789 dpfs-test-$gone.JkL012 dpfs-test-$gone.PqR678x dpfs-test.MnO345 "
scenario_cleanup; alive=""; holder=""
EXPECT=beforeFirstUnlock TMPDIR="$TOOLSETS" "$DPFS" run "$MNT" -- swift test --package-path "$PKG" --skip-build > /dev/null 2>&1
expect_eq "dpfs run -- swift test removes those whose runs ended since" "$(toolsets)" "dpfs-test-$gone.PqR678x dpfs-test.MnO345 "

# Bundle.main.bundleIdentifier is the app's, with --app and without bubblewrap too:
# dpfs writes the Info.plist Foundation reads beside the test bundle, marked as its own,
# and rewrites only that one for another app.
BUNDLE_DIR=$(cd "$PKG/.build/debug" && pwd -P)
bundle_id_seen() {  # bundle_id_seen NAME ID COMMAND...: the bundle-ID tests pass, seeing ID
    local name=$1 id=$2 out rc
    shift 2
    out=$(EXPECT_ID=$id "$@" --filter "[Bb]undleIdentifierIsTheApps" 2>&1); rc=$?
    if [ "$rc" -eq 0 ] && grep -q "xctest bundle id: $id\$" <<<"$out" && grep -q "swift-testing bundle id: $id\$" <<<"$out"; then
        pass "$name"
    else
        fail "$name" "exit $rc: $(grep -E 'bundle id|error|fail' <<<"$out" | head -5)"
    fi
}
plist_key() { python3 -c 'import plistlib,sys; print(plistlib.load(open(sys.argv[1], "rb")).get(sys.argv[2], ""))' "$BUNDLE_DIR/Info.plist" "$1"; }
expect_eq "the Info.plist beside the bundle is marked as dpfs's" "$(plist_key DPFSGeneratedFor)" "$APP"
check "unlock" unlock_device
printf '<plist version="1.0"><dict><key>application-identifier</key><string>ABCDE12345.com.example.widget</string></dict></plist>\n' > "$WORK/widget.plist"
check "register com.example.widget" "$DPFS" app add "$MNT" --entitlements "$WORK/widget.plist"
bundle_id_seen "dpfs test --app: the bundle ID is that app's" com.example.widget \
    "$DPFS" test "$MNT" --app com.example.widget -- --package-path "$PKG" --skip-build
expect_eq "the plist is rewritten for it" "$(plist_key CFBundleIdentifier)" "com.example.widget"
bundle_id_seen "then without --app, the sandbox's own app's again" "$APP" \
    "$DPFS" test "$MNT" -- --package-path "$PKG" --skip-build
bundle_id_seen "--no-isolation: the sandbox's own app's" "$APP" \
    "$DPFS" test "$MNT" --no-isolation -- --package-path "$PKG" --skip-build
bundle_id_seen "--no-isolation --app: that app's" com.example.widget \
    "$DPFS" run "$MNT" --no-isolation --app com.example.widget -- swift test --package-path "$PKG" --skip-build
rm "$BUNDLE_DIR/Info.plist"
printf '<plist version="1.0"><dict><key>CFBundleIdentifier</key><string>com.developer.own</string></dict></plist>\n' > "$BUNDLE_DIR/Info.plist"
cp -p "$BUNDLE_DIR/Info.plist" "$WORK/own.plist"
bundle_id_seen "a developer's own Info.plist gives the bundle ID" com.developer.own \
    "$DPFS" test "$MNT" --app com.example.widget -- --package-path "$PKG" --skip-build
check "and is left as it was" cmp "$BUNDLE_DIR/Info.plist" "$WORK/own.plist"
rm "$BUNDLE_DIR/Info.plist"
# A program dpfs run starts by hand gets no Info.plist: its directory may be /usr/bin.
mkdir "$WORK/bin" && cp "$(type -P true)" "$WORK/bin/"
check "dpfs run starts a program" "$DPFS" run "$MNT" -- "$WORK/bin/true"
expect_eq "and writes nothing beside it" "$(ls "$WORK/bin")" "true"

check_error "a failing suite fails dpfs run" "failed" env EXPECT=wrong "$DPFS" run "$MNT" -- swift test --package-path "$PKG" --skip-build
check_error "dpfs test refuses a path that is no sandbox" "mount" "$DPFS" test "$WORK" -- --package-path "$PKG"
finish
