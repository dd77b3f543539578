// The daemon's log in the systemd journal, beside daemon.log, where a journal runs:
// each line with its syslog priority, SYSLOG_IDENTIFIER=dpfs and the device and mount
// it is about (journalctl -t dpfs, or DPFS_MOUNTPOINT=...). Never a secret: the log
// holds none.
import CSystemd
import Foundation
import Glibc
import Logging

struct JournalLogHandler: LogHandler {
    static let socketPath = "/run/systemd/journal/socket"

    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    let label: String
    let device: String
    let mountpoint: String

    /// Whether a journal listens here: otherwise daemon.log alone is the log.
    static var isAvailable: Bool { access(socketPath, W_OK) == 0 }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = [
            "MESSAGE=\(event.message)",
            "PRIORITY=\(Self.priority(of: event.level))",
            "SYSLOG_IDENTIFIER=dpfs",
            "DPFS_DEVICE=\(device)",
            "DPFS_MOUNTPOINT=\(mountpoint)",
            "DPFS_LOGGER=\(label)",
        ].map { Array($0.utf8) }
        withIOVectors(fields) { vectors in _ = sd_journal_sendv(vectors.baseAddress, Int32(vectors.count)) }
    }

    /// syslog(3)'s priorities, as journald reads them.
    static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    private func withIOVectors(_ fields: [[UInt8]], _ body: (UnsafeBufferPointer<iovec>) -> Void) {
        var vectors: [iovec] = []
        func next(_ index: Int) {
            guard index < fields.count else { return vectors.withUnsafeBufferPointer(body) }
            fields[index].withUnsafeBytes { bytes in
                vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count))
                next(index + 1)
            }
        }
        next(0)
    }
}
