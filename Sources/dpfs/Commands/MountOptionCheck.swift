// mount's -o options, checked with libfuse before the daemon starts: an option it does
// not know is named, with the way on where the slip is a known one (dpfs's own option
// given to -o, or lock-on='s events split by the comma of a mount -o list).
import Foundation
import SandboxFS

enum MountOptionCheck {
    /// dpfs mount's options that mount.fuse.dpfs takes as NAME=VALUE in a -o list.
    static let ownOptions = ["grace-period", "inactivity-reboot", "user-inactive-period", "log-level", "lock-on"]

    /// FUSE's options that name the mount in the mount table, which the daemon sets.
    static let reserved: Set<String> = ["fsname", "subtype"]

    /// Throws a usage error naming what libfuse refuses in `options`; `lockOn` is the
    /// --lock-on given, for the hint about its events.
    static func check(_ options: [String], lockOn: String?) throws(CLIError) {
        let given = options.flatMap(FuseOptionCheck.splitOptions)
        if let taken = given.first(where: { reserved.contains(String($0.prefix { $0 != "=" })) }) {
            throw CLIError("the mount option '\(taken)' is dpfs's own to set: every dpfs command finds its mount "
                           + "by the type fuse.dpfs and the source dpfs:DEVICE_DIR", status: .usage)
        }
        switch FuseOptionCheck.refusal(of: options) {
        case nil: return
        case .other(let why)?:
            throw CLIError("libfuse refuses the mount options \(options.joined(separator: ",")): \(why)", status: .usage)
        case .unknown(let unknown)?:
            throw CLIError(message(unknown: unknown, lockOn: lockOn), status: .usage)
        }
    }

    static func message(unknown: [String], lockOn: String?) -> String {
        let named = unknown.map { "'\($0)'" }.joined(separator: ", ")
        let what = unknown.count == 1 ? "unknown mount option \(named)" : "unknown mount options \(named)"
        let events = unknown.filter { LockTrigger(rawValue: $0) != nil }
        if !events.isEmpty {
            let joined = ((lockOn.map { [$0.replacingOccurrences(of: ",", with: "+")] } ?? []) + events).joined(separator: "+")
            return "\(what); in a mount -o list or an fstab line, lock-on= joins its events with +, "
                + "as in lock-on=\(joined): a comma starts the next option"
        }
        for option in unknown {
            let parts = option.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0].replacingOccurrences(of: "_", with: "-")
            guard ownOptions.contains(name) else { continue }
            let value = parts.count > 1 ? String(parts[1]) : "VALUE"
            return "\(what); dpfs's own option is --\(name) \(value) on the dpfs mount command line, "
                + "\(name)=\(value) in a mount -o list or an fstab line"
        }
        return "\(what); -o takes FUSE's mount options (see mount.fuse3(8)) and nonempty"
    }
}
