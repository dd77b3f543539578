// What a DataProtectionKit call reports when it cannot reach or drive the device.
// Errors of file access itself are Foundation's (CocoaError with a POSIXError inside).
import DPFSProtocol
import Foundation

public enum DeviceError: Error, CustomStringConvertible, Equatable {
    /// DPFS_MOUNT is not set and no mountpoint was given.
    case noDevice
    /// The path is not a mounted dpfs sandbox.
    case notMounted(String)
    /// The daemon behind the mountpoint did not answer.
    case unreachable(mountpoint: String, reason: String)
    /// The daemon did not answer within the time limit.
    case timedOut(mountpoint: String, seconds: Double)
    /// The daemon answered with a refusal (a wrong passcode, a delay after failed attempts, …).
    case refused(String)
    /// waitFor(state:timeout:) gave up; `last` is the state seen last.
    case stateNotReached(wanted: DeviceState, last: DeviceState?, seconds: Double)

    public var description: String {
        switch self {
        case .noDevice:
            return "no dpfs device: DPFS_MOUNT is not set (run the program with `dpfs run MOUNTPOINT -- …`, or pass a mountpoint)"
        case .notMounted(let path): return "\(path) is not a mounted dpfs sandbox"
        case .unreachable(let mountpoint, let reason): return "cannot reach the dpfs daemon of \(mountpoint): \(reason)"
        case .timedOut(let mountpoint, let seconds):
            return "the dpfs daemon of \(mountpoint) did not answer within \(seconds) s"
        case .refused(let text): return text
        case .stateNotReached(let wanted, let last, let seconds):
            return "the device did not reach \(wanted.rawValue) within \(seconds) s (last state: \(last?.rawValue ?? "unknown"))"
        }
    }
}
