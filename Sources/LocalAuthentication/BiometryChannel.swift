// One biometry request to the daemon of the mount DPFS_MOUNT names (as `dpfs run`
// sets it), with a time limit longer than a prompt's wait for an answer.
import DPFSProtocol
import Foundation
import Glibc

enum BiometryChannel {
    /// Above the daemon's prompt timeout, with room for one prompt already on screen.
    static let timeoutSeconds: Double = 30

    /// The daemon's answer, or nil when no device answers.
    static func send(_ request: BiometryRequest) -> BiometryReply? {
        guard let value = getenv("DPFS_MOUNT"), case let mountpoint = String(cString: value), !mountpoint.isEmpty,
              let client = try? ControlClient(mountpoint: mountpoint, timeout: timeoutSeconds) else { return nil }
        client.setTimeout(seconds: timeoutSeconds)
        return (try? client.send(.biometry(request)))?.biometry
    }

    /// 128 random bits in hex: the name of one LAContext at the daemon.
    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
