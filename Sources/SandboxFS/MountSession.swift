// Mounts a filesystem with libfuse's low-level API and serves it until unmounted:
// fuse_session_new with the operation table, fuse_session_mount, a larger read-ahead
// for the mount, signal handlers, the multithreaded loop.
import BlockStore
import CFuse
import CLinux
import DataProtection
import Foundation
import Glibc

public enum MountError: Error, CustomStringConvertible {
    case setup(String)
    case mount(String)

    public var description: String {
        switch self {
        case .setup(let why): return "cannot set up the FUSE session: \(why)"
        case .mount(let path): return "cannot mount on \(path) (is /dev/fuse available and the mountpoint a directory?)"
        }
    }
}

public final class MountSession {
    let fileSystem: SandboxFileSystem
    let mountpoint: String
    let session: OpaquePointer
    /// The io_uring queues, made when the mount asks for them (DPFS_IO_URING=1) and used
    /// if the kernel offers FUSE over io_uring; nil otherwise.
    private let rings: UnsafeMutablePointer<dpfs_rings>?
    private var arguments: [UnsafeMutablePointer<CChar>?]

    /// `options` are FUSE mount options (as after -o), comma-separated strings.
    public init(fileSystem: SandboxFileSystem, mountpoint: String, options: [String]) throws {
        self.fileSystem = fileSystem
        self.mountpoint = mountpoint
        let device = fileSystem.device.directory.root
        var all = ["fsname=dpfs:\(device)", "subtype=dpfs"]
        let checks = Self.needsKernelPermissionChecks(options)
        if checks { all.append("default_permissions") }
        fileSystem.kernel.checksPermissions = checks
        if !ProcessInfo.processInfo.environment.keys.contains("DPFS_NO_AUTO_UNMOUNT") {
            all.append("auto_unmount")  // a killed daemon leaves no dead mount behind
        }
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
        let socketsBefore = Self.socketDescriptors()
        guard fuse_session_mount(made, mountpoint) == 0 else {
            fuse_session_destroy(made)
            throw MountError.mount(mountpoint)
        }
        let unmounter = Self.closeUnmounterSocketLast(after: fuse_session_fd(made), madeBefore: socketsBefore)
        // Without the handshake the kernel keeps asking for security.capability: slower, not wrong.
        let installed = KernelChannel.install(on: made)
        // Asked for only: it makes creates and removals faster but a single stream of
        // small reads or writes slower, its caller moved to the other CPU at each reply
        // (README, FUSE over io_uring).
        let ringsWanted = ProcessInfo.processInfo.environment["DPFS_IO_URING"] == "1"
        rings = installed && ringsWanted ? KernelChannel.makeRings(for: made, unmounter: unmounter) : nil
        _ = fuse_set_signal_handlers(made)
        Self.raiseReadAhead(mountpoint)
    }

    /// With auto_unmount, libfuse keeps a socket to the fusermount3 it started, which
    /// unmounts when the socket closes, but only if opening the mount point then fails
    /// with ENOTCONN, that is once the kernel has ended the connection. A killed process's
    /// descriptors close in numeric order: below /dev/fuse's, fusermount3 could look
    /// before the connection was gone, get ECONNABORTED, and leave the dead mount behind,
    /// so it is renumbered above. (The io_uring queues hold /dev/fuse longer: they keep
    /// the socket too, ring_queues.h.) The socket's descriptor afterwards, or -1 (no
    /// auto_unmount). `madeBefore`: the sockets open before fuse_session_mount.
    static func closeUnmounterSocketLast(after fuseFD: Int32, madeBefore: [Int32: UInt64]) -> Int32 {
        guard fuseFD > 0 else { return -1 }
        for (fd, inode) in socketDescriptors().sorted(by: { $0.key < $1.key }) where madeBefore[fd] != inode {
            var pid: pid_t = 0, uid: uid_t = 0
            // libfuse made it with socketpair(2) while mounting, so its peer credentials
            // are this process's own.
            guard dpfs_peer_credentials(fd, &pid, &uid) == 0, pid == getpid() else { continue }
            if fd > fuseFD { return fd }
            let moved = fcntl(fd, F_DUPFD_CLOEXEC, fuseFD + 1)
            if moved >= 0 { close(fd) }
            return moved >= 0 ? moved : fd
        }
        return -1
    }

    /// The process's open socket descriptors and their sockets' inode numbers (a
    /// descriptor number may be reused by another socket).
    static func socketDescriptors() -> [Int32: UInt64] {
        var found: [Int32: UInt64] = [:]
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return found }
        for name in names {
            var st = stat()
            if let fd = Int32(name), fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK { found[fd] = UInt64(st.st_ino) }
        }
        return found
    }

    /// The inode table holds an O_PATH descriptor per inode the kernel knows (a large
    /// listing makes many): as many descriptors as the system allows this process.
    /// Root may go beyond the hard limit, up to the kernel's (fs.nr_open).
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return }
        if geteuid() == 0, let text = readProcFile("/proc/sys/fs/nr_open"),
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

    /// Sets the read-ahead of the mount's backing device info (/sys/class/bdi/0:N,
    /// N the mount's minor device number). Needs root; without it the default stays.
    static func raiseReadAhead(_ mountpoint: String) {
        guard let mountinfo = readProcFile("/proc/self/mountinfo") else { return }
        let resolved = realpath(mountpoint, nil).map { path in defer { free(path) }; return String(cString: path) } ?? mountpoint
        let escaped = resolved.replacingOccurrences(of: "\\", with: "\\134")
            .replacingOccurrences(of: " ", with: "\\040").replacingOccurrences(of: "\t", with: "\\011")
            .replacingOccurrences(of: "\n", with: "\\012")
        // Fields: id parent major:minor root mountpoint …; the newest mount comes last.
        let device = mountinfo.split(separator: "\n").last { line in
            let fields = line.split(separator: " ", maxSplits: 5)
            return fields.count > 4 && fields[4] == escaped
        }.map { String($0.split(separator: " ")[2]) }
        guard let device, device.hasPrefix("0:") else { return }
        let path = "/sys/class/bdi/\(device)/read_ahead_kb"
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let value = "\(readAheadKB)\n"
        _ = value.withCString { write(fd, $0, strlen($0)) }
    }

    /// The whole of a /proc file (their sizes read as zero, so read to the end).
    static func readProcFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Serves requests until the filesystem is unmounted or the daemon is signalled.
    public func serve() -> Int32 {
        // When the session falls idle, the idle I/O buffers give their pages back (they
        // may also hold plaintext of partial blocks).
        let context = Unmanaged.passUnretained(fileSystem).toOpaque()
        let rc = dpfs_session_loop_mt(session, 16, { context in
            guard let context else { return }
            Unmanaged<SandboxFileSystem>.fromOpaque(context).takeUnretainedValue().pool.scrub()
        }, context, rings)
        KernelChannel.forgetRings()
        dpfs_rings_free(rings)
        fileSystem.finishRemovals()
        fuse_remove_signal_handlers(session)
        fuse_session_unmount(session)
        fuse_session_destroy(session)
        for argument in arguments { free(argument) }
        return rc
    }
}

/// RLIMIT_NOFILE as getrlimit takes it (Glibc shows an enum type on some systems).
private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
