// The sandbox as a filesystem on libfuse's low-level API: each kernel inode is an
// entry of the inode table (InodeTable.swift), each operation a *at() call on the
// backing node of its entry or its parent's. Names, modes, times and links are stored
// as they are; file contents are sealed (BlockStore).
//
// The state, one owner per job:
//   inodes       the kernel's inodes and their open files (InodeTable, Inode)
//   ownership    who a new node belongs to (Ownership.swift)
//   privileges   the set-ID/capability epoch (Privileges.swift)
//   reaper       frees removed files off the request path (NodeReaper.swift)
//   kernel       the session, for notifications (KernelNotifier below)
//   damageNotes  the damaged files whose damage the log has told (DamagedReads.swift)
// Operations live in Namespace.swift (names), NodeAttributes.swift (stat, setattr),
// Directories.swift, FileOperations.swift (data), Attributes.swift (xattrs),
// DirectoryClasses.swift, Revocation.swift (lock).
import BlockStore
import CFuse
import DataProtection
import Glibc
import Logging
import Synchronization
import SystemCalls

public final class SandboxFileSystem: Sendable {
    /// A readable descriptor of the sandbox directory (statfs, the reapers' directory).
    let rootFD: Int32
    let device: LockStateManager
    let inodes: InodeTable
    let pool = BufferPool(size: (1 << 20) + 4 * BlockLayout.cipherBlockSize + 64 * 1024)
    let logger: Logger
    public let controlSocketPath: String
    let ownership = Ownership()
    let privileges = PrivilegeEpoch()
    let reaper: NodeReaper
    let kernel = KernelNotifier()
    let acls: ACLPresence
    let spares = SpareFiles()
    /// The files created in each directory since its last fsync (NewFileSyncs.swift).
    let newFileSyncs = NewFileSyncs()
    /// The damaged files whose damage is in the log already (DamagedReads.swift).
    let damageNotes = DamageNotes()
    /// Classes given at creation, by thread and directory (CreateClasses.swift).
    let createClasses = CreateClasses()
    /// Whether a handle for writing only is uncached (FileOperations `install`): set at
    /// the handshake, where the kernel is new enough.
    let writeOnlyHandlesUncached = Atomic<Bool>(false)
    /// Whether the kernel opens directories without a request once opendir answers
    /// ENOSYS (FUSE 7.29, Linux 5.1).
    let kernelOpensDirectories = Atomic<Bool>(false)
    /// SEEK_DATA and SEEK_HOLE requests waiting on the kernel's write-back now
    /// (Seek.swift): each holds a worker, and the write-back needs others free.
    let seeksWaitingOnKernel = Atomic<Int>(0)
    /// Serialises changes to name tags: each is a read-modify-write of one attribute,
    /// and a link racing a rename of the same file must not lose a tag.
    let nameTagChanges = Mutex<Void>(())

    /// How long the kernel may keep a name's entry and a node's attributes. Every
    /// change to names and attributes goes through this mount (the kernel updates its
    /// caches as it sends them), and a lock changes neither (names stay readable while
    /// locked; Revocation.swift drops only file pages): a long timeout spares a LOOKUP
    /// or GETATTR round trip per name whenever a tree is walked again (find, then cat,
    /// then rm -rf). Edits made behind the mount in the backing tree are damage,
    /// found where a name's tags are checked: when its node is opened or listed
    /// (NameBindings.swift), which a cached entry does not skip.
    static let entryTimeout = 60.0
    static let attributeTimeout = 60.0

    public init(device: LockStateManager, controlSocketPath: String, logger: Logger) throws {
        let sandbox = device.directory.sandboxPath
        let fd = Glibc.open(sandbox, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", sandbox) }
        let pathFD = Glibc.open(sandbox, OpenFlag.path | O_DIRECTORY | O_CLOEXEC)
        guard pathFD >= 0 else { close(fd); throw SystemError("open", sandbox) }
        do {
            inodes = try InodeTable(rootFD: pathFD, mountFD: fd)
        } catch {
            close(fd); close(pathFD)
            throw SystemError("stat", sandbox)
        }
        rootFD = fd
        self.device = device
        acls = ACLPresence(device.directory)
        self.controlSocketPath = controlSocketPath
        self.logger = logger
        reaper = NodeReaper(sandbox: fd, log: { [logger] in logger.warning("\($0)") })
        let table = inodes
        device.setMountedInodeCount { table.count.load(ordering: .relaxed) }
        device.setTransport { KernelChannel.transport }
        device.addRevoker { [unowned self] classes, reason in self.revoke(classes, reason: reason) }
    }

    /// The entry of a node id the kernel sent (valid until the kernel forgets it).
    @inline(__always)
    func node(_ ino: fuse_ino_t) -> Inode {
        if ino == fuse_ino_t(FUSE_ROOT_ID) { return inodes.root }
        let raw = UnsafeRawPointer(bitPattern: UInt(ino)).unsafelyUnwrapped
        return Unmanaged<Inode>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Runs `body` with `inode`'s descriptor (Inode.withDescriptor), or answers `req`
    /// with the error that kept it from being reopened.
    func using(_ req: fuse_req_t?, _ inode: Inode, _ body: (Int32) -> Void) {
        do throws(Errno) { try inode.withDescriptor { (fd) throws(Errno) in body(fd) } } catch { reply(req, error) }
    }

    /// The node's attributes as the kernel sees them: a regular file's plaintext size.
    func attributes(_ inode: Inode) throws(Errno) -> stat {
        var st = try inode.backingStat()
        Self.presentSize(of: inode, &st)
        // The reapers' directory is a subdirectory of the root no listing shows.
        if inode.nodeID == fuse_ino_t(FUSE_ROOT_ID), st.st_nlink > 2, reaper.holdsDirectory { st.st_nlink -= 1 }
        return st
    }

    /// Reports a regular file's plaintext size instead of its backing size, and a
    /// symlink's plaintext target length instead of its sealed one (NameCipher: base64url
    /// of nonce ‖ target ‖ tag, so it follows from the length alone).
    @inline(__always)
    static func presentSize(_ st: UnsafeMutablePointer<stat>) {
        switch st.pointee.st_mode & S_IFMT {
        case S_IFREG: st.pointee.st_size = off_t(BlockLayout.plainSize(backingSize: Int(st.pointee.st_size)))
        case S_IFLNK: st.pointee.st_size = off_t(max(0, Int(st.pointee.st_size) * 3 / 4 - NameCipher.targetOverhead))
        default: break
        }
    }

    /// Sets `st`'s size as the mount shows it for `inode`: an open file's own size (it
    /// may not have reached the backing file), else from the backing size.
    static func presentSize(of inode: Inode, _ st: inout stat) {
        if inode.isRegular, let file = inode.openFile { st.st_size = off_t(file.reading { file.plainSize }) } else if st.st_mode & S_IFMT == S_IFLNK && st.st_size == LongTarget.standInLength {
            st.st_size = off_t(longTargetLength(inode) ?? 0)
        } else {
            presentSize(&st)
        }
    }

    /// The length a long target's stand-in records (LongTarget).
    static func longTargetLength(_ inode: Inode) -> Int? {
        var buffer = [CChar](repeating: 0, count: LongTarget.standInLength + 1)
        guard let n = try? inode.systemCall({ readlinkat($0, "", &buffer, buffer.count) }), n == LongTarget.standInLength else {
            return nil
        }
        return LongTarget.length(of: String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Unlinks the removed files the reapers have not reached yet (at unmount).
    func finishRemovals() { reaper.drain() }
}

/// Who sent a request.
struct Caller {
    let uid: uid_t
    let gid: gid_t
    /// The calling thread's ID, as the kernel numbers it in the mount's PID namespace
    /// (0 when it is not visible there).
    let thread: pid_t

    init(_ req: fuse_req_t?) {
        if let context = fuse_req_ctx(req) {
            uid = context.pointee.uid
            gid = context.pointee.gid
            thread = context.pointee.pid
        } else {
            uid = 0
            gid = 0
            thread = 0
        }
    }
}

/// The session, for the notifications a lock and a privilege drop send the kernel.
final class KernelNotifier: @unchecked Sendable {
    // @unchecked: `session` and `checksPermissions` are written once, before the loop
    // serves requests.
    var session: OpaquePointer?
    /// Whether the kernel checks permissions on this mount (MountSession): then it
    /// enforces POSIX ACLs too (LowLevelOperations.configure).
    var checksPermissions = false

    /// Drops the kernel's cached pages of `inode` (writing dirty ones back first) and its attributes.
    func invalidatePages(_ inode: Inode) {
        inode.kernelView.changed()  // the kernel drops the attributes with the pages
        guard let session else { return }
        _ = fuse_lowlevel_notify_inval_inode(session, inode.nodeID, 0, 0)
    }

    /// Has the kernel fetch `inode`'s attributes before it uses them again (its pages
    /// stay). Safe inside any handler, also one serving that inode.
    func invalidateAttributes(_ inode: Inode) {
        inode.kernelView.changed()
        guard let session else { return }
        _ = fuse_lowlevel_notify_inval_inode(session, inode.nodeID, -1, 0)
    }
}
