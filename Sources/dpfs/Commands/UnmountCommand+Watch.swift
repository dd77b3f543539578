// A mount's daemon watch (SandboxFS/DaemonWatch.swift): `dpfs unmount MOUNTPOINT
// --when-closed FD --source dpfs:DEVICE`, started by the daemon. It waits for the
// daemon to end; if the daemon died with its mount in place, it writes so to the
// device's log and leaves the mount dead, refusing every access (fail closed).
import DataProtection
import Foundation
import Glibc
import Logging
import SandboxFS

extension Unmount {
    /// Waits on `daemonPipe` until the daemon says its mount is gone or its process ends
    /// without saying so; in the second case records what it left at `target`.
    func watchDaemon(_ target: String, daemonPipe: Int32, source: String) {
        // Only the pipe ends it, as fusermount3's auto_unmount lets only its socket:
        // a SIGTERM to every process (shutdown, a service's stop) must not end it before
        // the daemon it outlives.
        for ignored in [SIGHUP, SIGINT, SIGTERM, SIGPIPE] { signal(ignored, SIG_IGN) }
        let daemon = getppid()
        let announced: DaemonWatch.Identity?
        switch DaemonWatch.awaitDaemonEnd(daemonPipe) {
        case .unmounted: return
        case .vanished(let mount): announced = mount
        }
        let refusal = "every access there fails (Transport endpoint is not connected) until "
            + "`dpfs unmount \(target)` or the next `dpfs mount` on it"
        if announced.map({ $0.isShown(at: target) }) ?? DaemonWatch.showsDeadMount(at: target, source: source) {
            report("the daemon (pid \(daemon)) died and left its mount at \(target) dead: \(refusal)", at: target, source: source)
        } else if announced == nil {
            report("the daemon (pid \(daemon)) died while mounting \(target); a mount that appears there is dead: \(refusal)",
                   at: target, source: source)
        }
    }

    /// Into daemon.log (this process's stderr is the daemon's) as the daemon logs.
    private func report(_ text: String, at target: String, source: String) {
        let device = source.hasPrefix("dpfs:") ? String(source.dropFirst(5)) : source
        let log = Logger(label: "dpfs") { DaemonLog.handler(label: $0, level: .info, device: device, mountpoint: target) }
        log.critical("\(text)")
    }
}
