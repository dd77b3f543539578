// Where a device's messages go: daemon.log (the daemon's stderr, one line per message
// with its level) always, and the systemd journal too where one runs. The daemon and
// the watch that outlives it write through the same handler, so every line of
// daemon.log has one form.
import Logging

enum DaemonLog {
    static func handler(label: String, level: Logger.Level, device: String, mountpoint: String) -> any LogHandler {
        var stream = StreamLogHandler.standardError(label: label)
        stream.logLevel = level
        guard JournalLogHandler.isAvailable else { return stream }
        var both = MultiplexLogHandler([stream, JournalLogHandler(label: label, device: device, mountpoint: mountpoint)])
        both.logLevel = level
        return both
    }
}
