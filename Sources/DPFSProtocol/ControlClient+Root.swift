// Root's way to the daemon of another user's mount, for `dpfs unmount`: root may
// unmount any mount, and is refused as the owner is while programs run in it as apps.
// The mount answers root nothing (FUSE serves only its owner without allow_other), so
// the daemon's socket is found as the kernel lists it: a listening Unix socket named
// PID.sock after the daemon's pid. Its peer must be that pid, running as the mount's
// owner, before anything is sent; the daemon serves root its status and the unmount
// alone (ControlScope.root).
import Foundation
import Glibc

extension ControlClient {
    /// Connects, as root, to daemon `pid` of `mountpoint`, which `owner` mounted.
    public convenience init(rootTo pid: pid_t, owner: uid_t, mountpoint: String, timeout: Double = connectTimeout) throws {
        guard getuid() == 0 else {
            throw ControlClientError.refused(mountpoint, reason: "only root reaches another user's daemon")
        }
        guard let socketPath = Self.listeningSocket(named: "\(pid).sock") else {
            throw ControlClientError.refused(mountpoint, reason: "its daemon (pid \(pid)) shows no control socket")
        }
        try self.init(socketPath: socketPath, peer: (pid, owner), mountpoint: mountpoint, timeout: timeout)
    }

    /// The path of a listening Unix socket whose name is `name`, as /proc/net/unix
    /// lists them (Num RefCount Protocol Flags Type St Inode Path).
    static func listeningSocket(named name: String) -> String? {
        guard let table = ProcFile.read("/proc/net/unix") else { return nil }
        let listening = "00010000"  // __SO_ACCEPTCON
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: true)
            guard fields.count == 8, fields[3] == listening else { continue }
            let path = String(fields[7])
            if path.hasPrefix("/"), (path as NSString).lastPathComponent == name { return path }
        }
        return nil
    }
}
