// Which failures of a control connection may be a daemon's death, to be told as one
// once the mount shows it dead: one that broke, and one that could not be made because
// the daemon died between the mount's check and the connect.
@testable import DPFSProtocol
import Glibc
import Testing

@Suite struct DaemonDeathTests {
    @Test func aSocketLeftWithNoListenerMayBeADeath() {
        #expect(DaemonDeath.breaksConnection(ControlClientError.cannotConnect("/m", ECONNREFUSED)))
        #expect(DaemonDeath.breaksConnection(ControlClientError.cannotConnect("/m", ENOENT)))
    }

    @Test func aRefusedPermissionIsNot() {
        #expect(!DaemonDeath.breaksConnection(ControlClientError.cannotConnect("/m", EACCES)))
        #expect(!DaemonDeath.breaksConnection(ControlClientError.noAnswer("/m", seconds: 1)))
    }

    @Test func aConnectionThatBrokeMayBe() {
        #expect(DaemonDeath.breaksConnection(FrameError.closed))
        #expect(DaemonDeath.breaksConnection(FrameError.io(ECONNRESET)))
        #expect(!DaemonDeath.breaksConnection(FrameError.io(EAGAIN)))
    }
}
