// Extended attributes. `user.dpfs.protection` is the file's class (read from its
// header) or a directory's class for new children; setting it on a file rewraps the
// file key, or on a raise gives the file a new one (ClassRaise.swift). The mount root also answers `user.dpfs.control` with the path of the
// control socket, so the CLI finds the daemon from the mountpoint. Other user.*
// attributes are stored sealed (SealedAttributes.swift); the other namespaces
// (system.* such as POSIX ACLs, trusted.*, security.capability) are stored on the
// backing node as they are. Security labels (security.* but the capability) are not
// kept: no security module on the host reads them from a FUSE mount, and answering
// EOPNOTSUPP lets ls -l stop asking for them after the first file (PosixACL.swift).
// The backing node is reached through /proc/self/fd/N of its O_PATH descriptor (the
// f*xattr calls do not take one); the handlers below return a count or throw the
// errno, and the request handlers at the end turn that into one reply.
import BlockStore
import CFuse
import CLinux
import DataProtection
import Glibc
import SystemCalls

extension SandboxFileSystem {
    static let reservedPrefix = "user.dpfs."

    /// Copies `text` out as an attribute value, or reports its size when `size` is 0.
    static func copyOut(_ text: String, _ value: UnsafeMutablePointer<CChar>?, _ size: Int) throws(Errno) -> Int {
        let bytes = Array(text.utf8)
        if size == 0 { return bytes.count }
        guard size >= bytes.count, let value else { throw Errno(ERANGE) }
        bytes.withUnsafeBytes { UnsafeMutableRawPointer(value).copyMemory(from: $0.start, byteCount: bytes.count) }
        return bytes.count
    }

    /// Runs `body` with a path that reaches the node itself (for calls that take no
    /// O_PATH descriptor); the error that kept the node's descriptor from being reopened.
    @inline(__always)
    func withNodePath<R>(_ node: Inode, _ body: (UnsafePointer<CChar>) throws(Errno) -> R) throws(Errno) -> R {
        try node.withDescriptor { (fd) throws(Errno) in try withProcPath(fd, body) }
    }

    /// `withNodePath` for one system call on the path (-1 and errno when it fails): what
    /// it returns; its errno, or the reopening's, thrown.
    @discardableResult @inline(__always)
    func systemCall<R: FixedWidthInteger & SignedInteger>(onPathOf node: Inode,
                                                         _ call: (UnsafePointer<CChar>) -> R) throws(Errno) -> R {
        try withNodePath(node) { (path) throws(Errno) in try Errno.check(call(path)) }
    }

    /// The authenticated header of a regular file: its open entry's, else read.
    func header(of node: Inode) throws(Errno) -> FileHeader {
        if let file = node.openFile {
            let header = file.reading { file.content.header }
            try checkOwnNames(node, identity: header.fileID, fd: file.content.fd)
            return header
        }
        let fd = try withNodePath(node, Self.openForHeader)
        defer { close(fd) }
        let header = try HeaderIO.read(fd, metadataKey: device.metadataKey)
        try checkOwnNames(node, identity: header.fileID, fd: fd)
        return header
    }

    /// The class of a regular file, read from its header.
    func fileClass(_ node: Inode) throws(Errno) -> ProtectionClass {
        guard let current = try header(of: node).current else { throw Errno.io }
        return current.protectionClass
    }

    func getAttribute(_ node: Inode, _ name: UnsafePointer<CChar>, _ value: UnsafeMutablePointer<CChar>?,
                      _ size: Int) throws(Errno) -> Int {
        let attribute = String(cString: name)
        if attribute == MountAttributes.controlSocket {
            guard node === inodes.root else { throw Errno(ENODATA) }
            return try Self.copyOut(controlSocketPath, value, size)
        }
        if attribute == Self.protectionAttribute {
            let found: ProtectionClass
            switch node.type {
            case S_IFDIR: found = try directoryClass(node, fresh: true)
            case S_IFREG: found = try fileClass(node)
            default: throw Errno(ENODATA)
            }
            return try Self.copyOut(found.name, value, size)
        }
        if attribute.hasPrefix(Self.reservedPrefix) { throw Errno(ENODATA) }
        if Self.isUnkeptLabel(attribute) { throw Errno.notSupported }
        if Self.isSealed(attribute) { return try getSealedAttribute(node, name, value, size) }
        if Self.isACL(attribute) && acls.noneSet { throw kernel.checksPermissions ? Errno(ENODATA) : Errno.notSupported }
        let tracked = AbsentAttribute(attribute)
        if let tracked, node.isKnownAbsent(tracked) { throw Errno(ENODATA) }
        let changes = node.attributeChanges()
        do throws(Errno) {
            return try systemCall(onPathOf: node) { CLinux.getxattr($0, name, value, size) }
        } catch {
            if error.rawValue == ENODATA, let tracked { node.noteAbsent(tracked, seenAt: changes) }
            throw error
        }
    }

    func setAttribute(_ node: Inode, _ name: UnsafePointer<CChar>, _ value: UnsafePointer<CChar>?,
                      _ size: Int, _ flags: Int32) throws(Errno) {
        let attribute = String(cString: name)
        if attribute == Self.protectionAttribute {
            let bytes = value.map { UnsafeRawBufferPointer(start: $0, count: size) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
            guard let protectionClass = ProtectionClass(name: String(decoding: bytes, as: UTF8.self)) else { throw Errno.invalid }
            switch node.type {
            case S_IFDIR: return try setDirectoryClass(node, protectionClass)
            case S_IFREG: return try setFileClass(node, protectionClass)
            default: throw Errno.notPermitted
            }
        }
        if attribute.hasPrefix(Self.reservedPrefix) { throw Errno.notPermitted }
        if Self.isUnkeptLabel(attribute) { throw Errno.notSupported }
        if Self.isSealed(attribute) { return try setSealedAttribute(node, name, value, size, flags) }
        if Self.isACL(attribute) {
            try acls.willSet(attribute, UnsafeRawBufferPointer(start: value, count: value == nil ? 0 : size))
        }
        try systemCall(onPathOf: node) { CLinux.setxattr($0, name, value, size, flags) }
        if let tracked = AbsentAttribute(attribute) { node.noteChanged(tracked, absent: false) }
        if attribute == Self.capabilityAttribute { privileges.granted() }
        if attribute.hasPrefix("system.posix_acl") { kernel.invalidateAttributes(node) }
    }

    func listAttributes(_ node: Inode, _ list: UnsafeMutablePointer<CChar>?, _ size: Int) throws(Errno) -> Int {
        var names: [CChar] = []
        let got = try withNodePath(node) { (backing) throws(Errno) -> Int in
            let needed = try Errno.check(CLinux.listxattr(backing, nil, 0))
            guard needed > 0 else { return needed }
            names = [CChar](repeating: 0, count: needed)
            return try Errno.check(CLinux.listxattr(backing, &names, needed))
        }
        // The dpfs namespace shows only the class (its name tags stay hidden), and
        // labels dpfs does not keep are not listed.
        let reserved = Array(Self.reservedPrefix.utf8).map { CChar(bitPattern: $0) }
        let kept = Self.withoutUnkeptLabels(names[0..<got])
        var stored: [CChar] = kept.split(separator: 0).filter { !$0.starts(with: reserved) }.flatMap { Array($0) + [0] }
        if node.isRegular || node.isDirectory { stored += Array(Self.protectionAttribute.utf8CString) }
        if size == 0 { return stored.count }
        guard size >= stored.count, let list else { throw Errno(ERANGE) }
        stored.withUnsafeBytes { UnsafeMutableRawPointer(list).copyMemory(from: $0.start, byteCount: stored.count) }
        return stored.count
    }

    func removeAttribute(_ node: Inode, _ name: UnsafePointer<CChar>) throws(Errno) {
        let attribute = String(cString: name)
        if attribute == Self.protectionAttribute {
            // A directory goes back to the sandbox default. A file always has a class:
            // removing the attribute gives it the class its directory passes on (so
            // rsync -X and cp --preserve=xattr from a filesystem without it work).
            // The parent is the one of any name: the file's class comes from where it is.
            switch node.type {
            case S_IFDIR: return try setDirectoryClass(node, device.defaultProtection)
            case S_IFREG:
                guard let parent = parentDirectory(of: node) else { throw Errno.io }
                return try setFileClass(node, try directoryClass(parent))
            default: throw Errno(ENODATA)
            }
        } else if attribute.hasPrefix(Self.reservedPrefix) {
            throw Errno(ENODATA)
        } else if Self.isUnkeptLabel(attribute) {
            throw Errno.notSupported
        }
        try systemCall(onPathOf: node) { CLinux.removexattr($0, name) }
        if let tracked = AbsentAttribute(attribute) { node.noteChanged(tracked, absent: true) }
        if attribute.hasPrefix("system.posix_acl") { kernel.invalidateAttributes(node) }
    }

    /// A directory holding a name of `node` (a regular file): the directory of the path
    /// /proc/self/fd shows for it (the name it was found by, create's opens it by name
    /// for that). nil when it has no name left, or none the kernel can show: a
    /// descriptor reopened from a file handle may be of an unnamed (disconnected) one.
    func parentDirectory(of node: Inode) -> Inode? {
        guard let path = Self.kernelPath(node), let root = Self.kernelPath(inodes.root),
              let slash = path.lastIndex(of: "/"), !path.hasSuffix(" (deleted)") else { return nil }
        let directory = String(path[..<slash])
        // Only a directory of the sandbox (not "/" for an unnamed file).
        guard directory == root || directory.hasPrefix(root + "/") else { return nil }
        let fd = Glibc.open(directory, OpenFlag.path | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0 else { close(fd); return nil }
        // Not counted as a lookup: a private entry, never handed to the kernel.
        return Inode(fd: fd, key: InodeKey(st), type: S_IFDIR, generation: 0)
    }

    /// The path /proc/self/fd shows for the node's descriptor.
    static func kernelPath(_ node: Inode) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = try? node.withDescriptor { (fd) throws(Errno) in
            try withProcPath(fd) { (path) throws(Errno) in try Errno.check(CLinux.readlink(path, &buffer, Int(PATH_MAX))) }
        }
        guard let n, n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Rewraps the file key under `newClass`, writing the spare header slot and
    /// syncing it; a raise gives the file a new key instead (ClassRaise.swift). Needs
    /// the current key (EPERM).
    func setFileClass(_ node: Inode, _ newClass: ProtectionClass) throws(Errno) {
        let file = try retainFile(node)
        defer { node.releaseOpen() }
        let content = file.content
        try file.writing { () throws(Errno) in
            try keepingModificationTime(content.fd) { () throws(Errno) in
                guard let key = content.key, let current = content.header.current else { throw Errno.notPermitted }
                if current.protectionClass == newClass { return }
                if newClass.strength > current.protectionClass.strength {
                    return try raiseClass(content, key: key, current: current, to: newClass)
                }
                guard let wrapped = FileKeyWrap.wrap(key, fileID: content.fileID, as: newClass, device: device) else {
                    throw Errno.notPermitted
                }
                let slot = FileHeader.KeySlot(generation: current.generation + 1, protectionClass: newClass, wrappedKey: wrapped)
                let index = content.header.spareSlotIndex
                let bytes = content.header.serializedSlot(slot, index: index, metadataKey: device.metadataKey)
                try bytes.withBytes { (slotBytes) throws(Errno) in
                    try pwriteAll(content.fd, slotBytes, at: FileHeader.slotOffset(index))
                }
                try Errno.check(fdatasync(content.fd))
                content.header.slots[index] = slot
                content.protectionClass = newClass
                // The new slot is durable: the old one, wrapped under the old class,
                // must not outlive it (it would open the file under the old class).
                let stale = 1 - index
                content.header.slots[stale] = nil
                try HeaderIO.eraseSlot(content.fd, index: stale)
            }
        }
        node.noteCachedClass(newClass)
    }

    /// Runs `change`, a rewrite of the backing file `fd` (its header, or its blocks under
    /// a new key) that leaves its content as it was, and puts the modification time back:
    /// a class change shows in the change time only, as any extended attribute's does.
    /// `cp -a` sets the times before it copies the class, and must not lose them.
    func keepingModificationTime<T>(_ fd: Int32, _ change: () throws(Errno) -> T) throws(Errno) -> T {
        var before = stat()
        try Errno.check(fstat(fd, &before))
        defer {
            let times = [timespec(tv_sec: 0, tv_nsec: TimeSpecial.omit), before.st_mtim]
            if futimens(fd, times) != 0 {
                logger.error("a class change could not keep the file's modification time (errno \(errno))")
            }
        }
        return try change()
    }

    // MARK: Requests

    /// Answers an xattr request from a handler that fills `size` bytes (or, with size
    /// 0, reports the size it needs) and returns a count.
    func replyAttribute(_ req: fuse_req_t?, _ size: Int,
                        _ body: (UnsafeMutablePointer<CChar>?, Int) throws(Errno) -> Int) {
        if size == 0 {
            do throws(Errno) {
                let needed = try body(nil, 0)
                fuse_reply_xattr(req, needed)
            } catch {
                reply(req, error)
            }
            return
        }
        guard let buffer = malloc(size)?.assumingMemoryBound(to: CChar.self) else { return reply(req, Errno(ENOMEM)) }
        defer { memset(buffer, 0, size); free(buffer) }
        do throws(Errno) {
            let n = try body(buffer, size)
            fuse_reply_buf(req, buffer, n)
        } catch {
            reply(req, error)
        }
    }

    func getxattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>, _ size: Int) {
        let node = node(ino)
        replyAttribute(req, size) { (value, size) throws(Errno) in try getAttribute(node, name, value, size) }
    }

    func listxattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ size: Int) {
        let node = node(ino)
        replyAttribute(req, size) { (list, size) throws(Errno) in try listAttributes(node, list, size) }
    }

    func setxattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>, _ value: UnsafePointer<CChar>?,
                  _ size: Int, _ flags: Int32) {
        let node = node(ino)
        if String(cString: name) == MountAttributes.createProtection {
            let bytes = value.map { UnsafeRawBufferPointer(start: $0, count: size) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
            guard node.isDirectory else { return reply(req, .invalid) }
            guard let protectionClass = ProtectionClass(name: String(decoding: bytes, as: UTF8.self)) else {
                return reply(req, .invalid)
            }
            return replying(req) { () throws(Errno) in
                try createClasses.set(protectionClass, thread: Caller(req).thread, directory: node.key)
            }
        }
        replying(req) { () throws(Errno) in
            try changingDirectoryACL(node, name) { () throws(Errno) in try setAttribute(node, name, value, size, flags) }
        }
    }

    func removexattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>) {
        let node = node(ino)
        if String(cString: name) == MountAttributes.createProtection {
            createClasses.clear(thread: Caller(req).thread, directory: node.key)
            return replyOK(req)
        }
        replying(req) { () throws(Errno) in
            try changingDirectoryACL(node, name) { () throws(Errno) in try removeAttribute(node, name) }
        }
    }

    /// `change` of attribute `name` of `node`; a directory's ACL changing drops the
    /// spare made there (SpareFiles), before and after, as a directory's mode does. A
    /// spare would not be taken where a default ACL applies, but it would hold its inode.
    private func changingDirectoryACL(_ node: Inode, _ name: UnsafePointer<CChar>,
                                      _ change: () throws(Errno) -> Void) throws(Errno) {
        guard node.isDirectory, Self.isACL(String(cString: name)) else { return try change() }
        spares.discard()
        defer { spares.discard() }
        try change()
    }
}
