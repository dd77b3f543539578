// One request to the daemon behind a mountpoint through Control's client, with a time
// limit, its errors turned into DeviceError.
import DPFSProtocol
import Glibc

enum DeviceChannel {
    /// Long enough for an unlock's passcode derivation on a loaded machine.
    static let requestTimeout: Double = 20

    static func send(_ request: ControlRequest, to mountpoint: String, secrets: [LockedSecret] = [],
                     timeout: Double = requestTimeout) throws -> ControlReply {
        do {
            let client = try ControlClient(mountpoint: mountpoint, timeout: timeout)
            client.setTimeout(seconds: timeout)
            return try client.send(request, secrets: secrets)
        } catch {
            throw translate(error, mountpoint: mountpoint, timeout: timeout)
        }
    }

    static func status(of mountpoint: String) throws -> DeviceStatus {
        guard let status = try send(.status, to: mountpoint).status else {
            throw DeviceError.unreachable(mountpoint: mountpoint, reason: "the daemon sent no status")
        }
        return status
    }

    static func translate(_ error: Error, mountpoint: String, timeout: Double) -> Error {
        if let error = error as? DeviceError { return error }
        if let error = error as? ControlClientError {
            if case .refused = error { return DeviceError.notMounted(mountpoint) }
            if case .daemon(let text, _) = error { return DeviceError.refused(text) }
            if case .noAnswer = error { return DeviceError.timedOut(mountpoint: mountpoint, seconds: timeout) }
            // The reason alone: DeviceError says whose daemon could not be reached.
            if case .cannotConnect(_, let code) = error {
                return DeviceError.unreachable(mountpoint: mountpoint, reason: String(cString: strerror(code)))
            }
            if case .daemonDied = error {
                return DeviceError.unreachable(mountpoint: mountpoint,
                                               reason: "it has died; " + ControlClientError.afterDeath(of: mountpoint))
            }
            return DeviceError.unreachable(mountpoint: mountpoint, reason: "\(error)")
        }
        if let error = error as? FrameError {
            if case .io(let code) = error, code == EAGAIN || code == EWOULDBLOCK {
                return DeviceError.timedOut(mountpoint: mountpoint, seconds: timeout)
            }
            return DeviceError.unreachable(mountpoint: mountpoint, reason: "\(error)")
        }
        return DeviceError.unreachable(mountpoint: mountpoint, reason: "\(error)")
    }
}
