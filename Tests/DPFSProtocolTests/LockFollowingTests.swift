// What `dpfs status` says of the lock that follows the session: its line, and the
// status it rides in, which keeps it across the control socket.
@testable import DPFSProtocol
import Foundation
import Testing

@Suite struct LockFollowingTests {
    @Test func aFollowedSessionIsNamed() {
        let following = LockFollowing(triggers: ["screen-lock", "suspend", "logout"], following: true, session: "c1", problem: nil)
        #expect(following.line == "screen-lock,suspend,logout (following session c1)")
    }

    @Test func suspendAloneFollowsLogind() {
        let following = LockFollowing(triggers: ["suspend"], following: true, session: nil, problem: nil)
        #expect(following.line == "suspend (following logind)")
    }

    @Test func notFollowingSaysWhy() {
        let lost = LockFollowing(triggers: ["screen-lock"], following: false, session: nil,
                                 problem: "the system bus is gone; locked then, reconnecting")
        #expect(lost.line == "screen-lock (not following: the system bus is gone; locked then, reconnecting)")
    }

    @Test func statusCarriesItAndLeavesItOutWithoutLockOn() throws {
        var status = DeviceStatus(state: .unlocked, classes: [:], passcodeSet: true, failedAttempts: 0, retryAfter: nil,
                                  erased: false, gracePeriod: 10, defaultProtection: "complete", deviceDirectory: "/d",
                                  pid: 1, secretStore: nil, inodes: nil)
        #expect(!String(decoding: try ControlCoding.encode(status), as: UTF8.self).contains("lockOn"))
        status.lockOn = LockFollowing(triggers: ["logout"], following: false, session: nil, problem: "session c1 ended; locked")
        let back = try ControlCoding.decode(DeviceStatus.self, ControlCoding.encode(status))
        #expect(back.lockOn == status.lockOn)
    }
}
