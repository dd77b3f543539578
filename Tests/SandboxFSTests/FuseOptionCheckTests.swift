// FuseOptionCheck against the libfuse dpfs links: the options it does not know are
// named as given, and those it knows pass.
@testable import SandboxFS
import XCTest

final class FuseOptionCheckTests: XCTestCase {
    func testOptionsLibfuseKnowsPass() {
        XCTAssertNil(FuseOptionCheck.refusal(of: ["rw,noatime", "allow_other,default_permissions"]))
        XCTAssertNil(FuseOptionCheck.refusal(of: []))
    }

    func testUnknownOptionsAreNamed() {
        XCTAssertEqual(FuseOptionCheck.refusal(of: ["rw,suspend", "grace_period=30"]), .unknown(["suspend", "grace_period=30"]))
    }

    func testAnEscapedCommaStaysInItsOption() {
        XCTAssertEqual(FuseOptionCheck.refusal(logged: "fuse: unknown option(s): `-o a\\,b,c'\n"), .unknown(["a\\,b", "c"]))
    }

    func testAnotherRefusalKeepsLibfusesWords() {
        XCTAssertEqual(FuseOptionCheck.refusal(logged: "fuse: invalid value for max_read\n"), .other("invalid value for max_read"))
    }
}
