// Mounts a filesystem with libfuse's low-level API and serves it until unmounted:
// fuse_session_new with the operation table, fuse_session_mount, a larger read-ahead
// for the mount, signal handlers, the multithreaded loop.
import BlockStore
import CFuse
import FuseLoop
import CLinux
import DataProtection
import Foundation
import Glibc

public enum MountError: Error, CustomStringConvertible {
    case setup(String)
    /// The mount point, and why fusermount3 or libfuse refused it, where either said.
    case mount(String, reason: String?)

    public var description: String {
        switch self {
        case .setup(let why): return "cannot set up the FUSE session: \(why)"
        case .mount(let path, let reason?): return "cannot mount on \(path): \(reason)"
        case .mount(let path, nil): return "cannot mount on \(path) (is /dev/fuse available and the mountpoint a directory?)"
        }
    }
}

public final class MountSession {
    let fileSystem: SandboxFileSystem
    let mountpoint: String
    let session: OpaquePointer
    /// The io_uring queues, made when the kernel offers FUSE over io_uring and the mount
    /// does not opt out (DPFS_IO_URING=0); nil otherwise.
    private let rings: OpaquePointer?
    /// The write end of the daemon watch's pipe (DaemonWatch.swift), open until the
    /// process ends.
    private let watch: Int32
    /// The mount made, as the mount table showed it then.
    private var mounted: (path: String, mount: DaemonWatch.Identity)?
    private var arguments: [UnsafeMutablePointer<CChar>?]

    /// `options` are FUSE mount options (as after -o), comma-separated strings.
    public init(fileSystem: SandboxFileSystem, mountpoint: String, options: [String]) throws {
        self.fileSystem = fileSystem
        self.mountpoint = mountpoint
        let device = fileSystem.device.directory.root
        let fileSystemName = "dpfs:\(device)"
        var all = ["fsname=\(Self.escapedOption(fileSystemName))", "subtype=dpfs"]
        let checks = Self.needsKernelPermissionChecks(options)
        if checks { all.append("default_permissions") }
        fileSystem.kernel.checksPermissions = checks
        all += options
        arguments = []
        for argument in ["dpfs", "-o", all.joined(separator: ",")] { arguments.append(strdup(argument)) }
        var args = fuse_args(argc: Int32(arguments.count), argv: nil, allocated: 0)
        let made: OpaquePointer? = arguments.withUnsafeMutableBufferPointer { argv in
            args.argv = argv.baseAddress
            var ops = makeLowLevelOperations()
            let context = Unmanaged.passRetained(fileSystem).toOpaque()
            return fuse_session_new(&args, &ops, MemoryLayout<fuse_lowlevel_ops>.size, context)
        }
        guard let made else { throw MountError.setup("fuse_session_new rejected the options \(all.joined(separator: ","))") }
        session = made
        fileSystem.kernel.session = made
        Self.raiseDescriptorLimit()
        // One path for the watch, the mount and the mount table: resolved once. The
        // watch is there before the mount: a daemon killed the moment its mount appears
        // has its death recorded too (DaemonWatch.swift).
        let target = Self.resolved(mountpoint)
        do {
            watch = try DaemonWatch.start(mountpoint: target, source: fileSystemName)
        } catch {
            fuse_session_destroy(made)
            throw error
        }
        let (status, said) = StandardErrorCapture.capturing { fuse_session_mount(made, target) }
        guard status == 0 else {
            // libfuse may fail after fusermount3 mounted (the connection not handed
            // over): that dead mount is then the watch's to record.
            let left = MountTable.topmost(at: target).map { $0.source == fileSystemName } ?? false
            DaemonWatch.dismiss(watch, unmounted: !left)
            fuse_session_destroy(made)
            throw MountError.mount(mountpoint, reason: StandardErrorCapture.fuseReason(in: said))
        }
        let connection = Self.connection(mountedAt: target)
        mounted = connection
        guard let connection else {
            fuse_session_unmount(made)
            fuse_session_destroy(made)
            let left = MountTable.topmost(at: target).map { $0.source == fileSystemName } ?? false
            DaemonWatch.dismiss(watch, unmounted: !left)
            throw MountError.setup("the new mount is not in /proc/self/mountinfo")
        }
        DaemonWatch.announce(watch, mount: connection.mount)
        // Without the handshake the kernel keeps asking for security.capability: slower, not wrong.
        let installed = KernelChannel.install(on: made)
        // Taken whenever the kernel offers it (root set the fuse module's enable_uring:
        // docs/design.md, FUSE over io_uring), unless DPFS_IO_URING=0 opts out.
        let ringsWanted = ProcessInfo.processInfo.environment["DPFS_IO_URING"] != "0" && Self.kernelOffersIOUring
        rings = installed && ringsWanted ? KernelChannel.makeRings(for: made) : nil
        if rings != nil {
            // Started here, by an ordinary thread, as the idle-class queue threads' own
            // helpers are (FuseLoop/ring_queues.c).
            fileSystem.reaper.start()
            if let failure = startSealHelpers() { fileSystem.logger.warning("\(failure)") }
        }
        Self.raiseReadAhead(connection.mount.device)
    }

    /// Whether the fuse module takes FUSE over io_uring (its enable_uring parameter);
    /// a kernel too old to have the parameter does not.
    static var kernelOffersIOUring: Bool {
        guard let text = try? String(contentsOfFile: "/sys/module/fuse/parameters/enable_uring", encoding: .utf8) else {
            return false
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines) == "Y"
    }

    /// `value` for an -o option: libfuse splits options at commas, and takes a comma
    /// (or a backslash) after a backslash as part of the value.
    static func escapedOption(_ value: String) -> String {
        var escaped = ""
        for character in value {
            if character == "," || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }

    /// The inode table holds an O_PATH descriptor per inode the kernel knows (a large
    /// listing makes many): as many descriptors as the system allows this process.
    /// Root may go beyond the hard limit, up to the kernel's (fs.nr_open).
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return }
        if geteuid() == 0, let text = ProcFile.read("/proc/sys/fs/nr_open"),
           let ceiling = rlim_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), ceiling > limit.rlim_max {
            limit.rlim_max = ceiling
        }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(RLIMIT_NOFILE_VALUE, &limit)
    }

    /// Whether the kernel must check permissions (default_permissions). Only processes
    /// of the mount's owner reach a mount without allow_other or allow_root; when that
    /// owner is root, the kernel's checks are the ones root passes anyway (the daemon,
    /// as root, meets the same on the backing files), but each costs a round trip: a
    /// directory's attributes go stale at every create or unlink in it, and the next
    /// check fetches them again. Executing a file without an x bit is still refused by
    /// the kernel, and access(2) is answered for root (SandboxFileSystem.access).
    /// Where the kernel checks, it enforces POSIX ACLs as well (PosixACL.swift); where
    /// only root reaches the mount, ACLs bind no one, as root passes them on ext4.
    static func needsKernelPermissionChecks(_ options: [String]) -> Bool {
        let given = options.flatMap { $0.split(separator: ",") }
        // libfuse makes the mount's owner the real user (getuid), not the effective one.
        return getuid() != 0 || given.contains { $0 == "allow_other" || $0 == "allow_root" || $0 == "default_permissions" }
    }

    /// Read-ahead of the mount, in KiB. The kernel starts a FUSE mount at 128 KiB
    /// whatever max_readahead says, so a sequential read arrives as 128 KiB requests,
    /// each a round trip; at 4 MiB it arrives as 1 MiB requests (max_pages), several in
    /// flight, opened on all cores. Small and random reads are not affected: the kernel
    /// grows the window only for sequential access.
    static let readAheadKB = 4096

    /// The mount just made at `mountpoint`: its path as /proc/self/mountinfo shows it,
    /// and which mount it is (its device "0:N", N the connection's number).
    static func connection(mountedAt resolved: String) -> (path: String, mount: DaemonWatch.Identity)? {
        guard let entry = MountTable.topmost(at: resolved), entry.device.hasPrefix("0:") else { return nil }
        return (resolved, DaemonWatch.Identity(device: entry.device, at: resolved))
    }

    /// `mountpoint` absolute and without symlinks, as the mount table shows it. realpath
    /// stats no node of a mount there (its last step is a readlink, which a directory
    /// answers without a request): the session may not be served yet.
    static func resolved(_ mountpoint: String) -> String {
        realpath(mountpoint, nil).map { path in defer { free(path) }; return String(cString: path) } ?? mountpoint
    }

    /// Sets the read-ahead of the mount's backing device info (/sys/class/bdi/0:N for
    /// the mount's `device`). Needs root; without it the default stays.
    static func raiseReadAhead(_ device: String) {
        let path = "/sys/class/bdi/\(device)/read_ahead_kb"
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let value = "\(readAheadKB)\n"
        _ = value.withCString { write(fd, $0, strlen($0)) }
    }

    /// Counts a request the daemon answered outside the filesystem (the control
    /// socket's): the session gives memory back once idle after it, as after its own.
    public static func noteOutsideRequest() { dpfs_loop_note_outside_request() }

    /// Run when SIGTERM, SIGINT or SIGHUP arrives, with its number, while the session
    /// still serves; the session ends after it (SignalWatch).
    public var beforeStop: @Sendable (Int32) -> Void = { _ in }

    /// Run once `serve` hears stopping signals (SignalWatch), before the first request:
    /// from then on a SIGTERM the daemon sends itself stops it as a service's would.
    public var whenListening: () -> Void = {}

    /// Run when the mount was taken from its mount point while its session goes on
    /// (DetachWatch): no dpfs command can reach the daemon any more.
    public var onDetached: @Sendable () -> Void = {}

    /// Serves requests until the filesystem is unmounted or the daemon is signalled.
    public func serve() -> Int32 {
        let signals = SignalWatch(session: session, beforeStop: beforeStop)
        if signals == nil { _ = fuse_set_signal_handlers(session) }
        whenListening()
        let shown = mounted
        let logger = fileSystem.logger
        // Each read of the table runs code the trim gave back; counted as a request, the
        // trim gives it back again once the daemon is idle (every other mount made on
        // the machine changes the table).
        let detach = DetachWatch(
            isShown: {
                defer { Self.noteOutsideRequest() }
                return shown.map { $0.mount.shown(at: $0.path) } ?? true
            },
            onUnreadable: {
                logger.warning("cannot read the mount table (out of descriptors or memory?): it is read again every second until it can, for a mount taken from its mount point")
            },
            onDetached: onDetached)
        // When the session falls idle, the idle I/O buffers give their pages back (they
        // may also hold plaintext of partial blocks).
        let context = Unmanaged.passUnretained(fileSystem).toOpaque()
        let rc = dpfs_session_loop_mt(session, 16, { context in
            guard let context else { return }
            Unmanaged<SandboxFileSystem>.fromOpaque(context).takeUnretainedValue().pool.scrub()
        }, context, rings)
        signals?.finish()
        detach?.finish()
        KernelChannel.forgetRings()
        dpfs_rings_free(rings)
        fileSystem.finishRemovals()
        if signals == nil { fuse_remove_signal_handlers(session) }
        unmountAndDestroy()
        return rc
    }

    /// Takes the mount down without serving it, when a step after the mount fails and
    /// the daemon ends: as `serve` does at its end, so that no dead mount is left, and
    /// the watch records no death.
    public func unmountUnserved() {
        KernelChannel.forgetRings()
        dpfs_rings_free(rings)
        unmountAndDestroy()
    }

    private func unmountAndDestroy() {
        fuse_session_unmount(session)
        // libfuse leaves a mount whose connection was aborted (and one it could not
        // unmount) in place, dead: the watch records it.
        DaemonWatch.dismiss(watch, unmounted: !(mounted.map { $0.mount.isShown(at: $0.path) } ?? false))
        fuse_session_destroy(session)
        for argument in arguments { free(argument) }
    }
}

/// RLIMIT_NOFILE as getrlimit takes it (Glibc shows an enum type on some systems).
private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
