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
// f*xattr calls do not take one); the handlers below return a count or -errno, and
// the request handlers at the end turn that into one reply.
import BlockStore
import CFuse
import CLinux
import DataProtection
import Glibc

extension SandboxFileSystem {
    static let reservedPrefix = "user.dpfs."

    /// Copies `text` out as an attribute value, or reports its size when `size` is 0.
    static func copyOut(_ text: String, _ value: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
        let bytes = Array(text.utf8)
        if size == 0 { return Int32(bytes.count) }
        guard size >= bytes.count, let value else { return -ERANGE }
        bytes.withUnsafeBytes { UnsafeMutableRawPointer(value).copyMemory(from: $0.start, byteCount: bytes.count) }
        return Int32(bytes.count)
    }

    /// Runs `body` (a system call) with a path that reaches the node itself; -1 and
    /// errno when the node's descriptor cannot be reopened.
    @inline(__always)
    func withNodePath<R: BinaryInteger>(_ node: Inode, _ body: (UnsafePointer<CChar>) -> R) -> R {
        node.withDescriptor { (fd: Int32) -> R in procPath(fd).withCString(body) }
    }

    /// The authenticated header of a regular file: its open entry's, else read.
    func header(of node: Inode) -> Result<FileHeader, Errno> {
        if let file = node.openFile {
            let header = file.reading { file.content.header }
            return checkOwnNames(node, identity: header.fileID, fd: file.content.fd).map { header }
        }
        // O_NOATIME: reading metadata from the header is not reading the file.
        var fd = withNodePath(node) { Glibc.open($0, O_RDONLY | O_CLOEXEC | OpenFlag.noAccessTime) }
        if fd < 0 && errno == EPERM { fd = withNodePath(node) { Glibc.open($0, O_RDONLY | O_CLOEXEC) } }
        guard fd >= 0 else { return .failure(.current) }
        defer { close(fd) }
        return HeaderIO.read(fd, metadataKey: device.metadataKey).flatMap { header in
            checkOwnNames(node, identity: header.fileID, fd: fd).map { header }
        }
    }

    /// The class of a regular file, read from its header.
    func fileClass(_ node: Inode) -> Result<ProtectionClass, Errno> {
        header(of: node).flatMap { header in
            header.current.map { .success($0.protectionClass) } ?? .failure(.io)
        }
    }

    func getAttribute(_ node: Inode, _ name: UnsafePointer<CChar>, _ value: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
        let attribute = String(cString: name)
        if attribute == MountAttributes.controlSocket {
            guard node === inodes.root else { return -ENODATA }
            return Self.copyOut(controlSocketPath, value, size)
        }
        if attribute == Self.protectionAttribute {
            let found: Result<ProtectionClass, Errno>
            switch node.type {
            case S_IFDIR: found = directoryClass(node, fresh: true)
            case S_IFREG: found = fileClass(node)
            default: return -ENODATA
            }
            switch found {
            case .success(let protectionClass): return Self.copyOut(protectionClass.name, value, size)
            case .failure(let error): return error.negated
            }
        }
        if attribute.hasPrefix(Self.reservedPrefix) { return -ENODATA }
        if Self.isUnkeptLabel(attribute) { return -EOPNOTSUPP }
        if Self.isSealed(attribute) { return getSealedAttribute(node, name, value, size) }
        if Self.isACL(attribute) && acls.noneSet { return kernel.checksPermissions ? -ENODATA : -EOPNOTSUPP }
        let tracked = AbsentAttribute(attribute)
        if let tracked, node.isKnownAbsent(tracked) { return -ENODATA }
        let changes = node.attributeChanges()
        let n = withNodePath(node) { CLinux.getxattr($0, name, value, size) }
        guard n < 0 else { return Int32(n) }
        let error = errno
        if error == ENODATA, let tracked { node.noteAbsent(tracked, seenAt: changes) }
        return -error
    }

    func setAttribute(_ node: Inode, _ name: UnsafePointer<CChar>, _ value: UnsafePointer<CChar>?,
                      _ size: Int, _ flags: Int32) -> Int32 {
        let attribute = String(cString: name)
        if attribute == Self.protectionAttribute {
            let bytes = value.map { UnsafeRawBufferPointer(start: $0, count: size) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
            guard let protectionClass = ProtectionClass(name: String(decoding: bytes, as: UTF8.self)) else { return -EINVAL }
            switch node.type {
            case S_IFDIR: return setDirectoryClass(node, protectionClass)
            case S_IFREG: return setFileClass(node, protectionClass)
            default: return -EPERM
            }
        }
        if attribute.hasPrefix(Self.reservedPrefix) { return -EPERM }
        if Self.isUnkeptLabel(attribute) { return -EOPNOTSUPP }
        if Self.isSealed(attribute) { return setSealedAttribute(node, name, value, size, flags) }
        if Self.isACL(attribute) {
            let recorded = acls.willSet(attribute, UnsafeRawBufferPointer(start: value, count: value == nil ? 0 : size))
            if recorded != 0 { return recorded }
        }
        let rc = withNodePath(node) { CLinux.setxattr($0, name, value, size, flags) }
        guard rc == 0 else { return -errno }
        if let tracked = AbsentAttribute(attribute) { node.noteChanged(tracked, absent: false) }
        if attribute == Self.capabilityAttribute { privileges.granted() }
        if attribute.hasPrefix("system.posix_acl") { kernel.invalidateAttributes(node) }
        return 0
    }

    func listAttributes(_ node: Inode, _ list: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
        var names: [CChar] = []
        let got = withNodePath(node) { backing -> Int in
            let needed = CLinux.listxattr(backing, nil, 0)
            guard needed > 0 else { return needed }
            names = [CChar](repeating: 0, count: needed)
            return CLinux.listxattr(backing, &names, needed)
        }
        guard got >= 0 else { return -errno }
        // The dpfs namespace shows only the class (its name tags stay hidden), and
        // labels dpfs does not keep are not listed.
        let reserved = Array(Self.reservedPrefix.utf8).map { CChar(bitPattern: $0) }
        let kept = Self.withoutUnkeptLabels(names[0..<got])
        var stored: [CChar] = kept.split(separator: 0).filter { !$0.starts(with: reserved) }.flatMap { Array($0) + [0] }
        if node.isRegular || node.isDirectory { stored += Array(Self.protectionAttribute.utf8CString) }
        if size == 0 { return Int32(stored.count) }
        guard size >= stored.count, let list else { return -ERANGE }
        stored.withUnsafeBytes { UnsafeMutableRawPointer(list).copyMemory(from: $0.start, byteCount: stored.count) }
        return Int32(stored.count)
    }

    func removeAttribute(_ node: Inode, _ name: UnsafePointer<CChar>) -> Int32 {
        let attribute = String(cString: name)
        if attribute == Self.protectionAttribute {
            // A directory goes back to the sandbox default. A file always has a class:
            // removing the attribute gives it the class its directory passes on (so
            // rsync -X and cp --preserve=xattr from a filesystem without it work).
            // The parent is the one of any name: the file's class comes from where it is.
            switch node.type {
            case S_IFDIR: return setDirectoryClass(node, device.defaultProtection)
            case S_IFREG:
                guard let parent = parentDirectory(of: node) else { return -EIO }
                switch directoryClass(parent) {
                case .success(let inherited): return setFileClass(node, inherited)
                case .failure(let error): return error.negated
                }
            default: return -ENODATA
            }
        } else if attribute.hasPrefix(Self.reservedPrefix) {
            return -ENODATA
        } else if Self.isUnkeptLabel(attribute) {
            return -EOPNOTSUPP
        }
        let rc = withNodePath(node) { CLinux.removexattr($0, name) }
        guard rc == 0 else { return -errno }
        if let tracked = AbsentAttribute(attribute) { node.noteChanged(tracked, absent: true) }
        if attribute.hasPrefix("system.posix_acl") { kernel.invalidateAttributes(node) }
        return 0
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
        let n = node.withDescriptor { fd in procPath(fd).withCString { CLinux.readlink($0, &buffer, Int(PATH_MAX)) } }
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Rewraps the file key under `newClass`, writing the spare header slot and
    /// syncing it; a raise gives the file a new key instead (ClassRaise.swift). Needs
    /// the current key (EPERM).
    func setFileClass(_ node: Inode, _ newClass: ProtectionClass) -> Int32 {
        switch retainFile(node) {
        case .failure(let error): return error.negated
        case .success(let file):
            defer { node.releaseOpen() }
            let content = file.content
            let rc = file.writing { () -> Int32 in
                guard let key = content.key, let current = content.header.current else { return -EPERM }
                if current.protectionClass == newClass { return 0 }
                if newClass.strength > current.protectionClass.strength {
                    return raiseClass(content, key: key, current: current, to: newClass)
                }
                guard let wrapped = FileKeyWrap.wrap(key, fileID: content.fileID, as: newClass, device: device) else {
                    return -EPERM
                }
                let slot = FileHeader.KeySlot(generation: current.generation + 1, protectionClass: newClass, wrappedKey: wrapped)
                let index = content.header.spareSlotIndex
                let bytes = content.header.serializedSlot(slot, index: index, metadataKey: device.metadataKey)
                let written = bytes.withUnsafeBytes { BlockIO.pwriteAll(content.fd, $0, at: FileHeader.slotOffset(index)) }
                if written != 0 { return written }
                guard fdatasync(content.fd) == 0 else { return -errno }
                content.header.slots[index] = slot
                content.protectionClass = newClass
                // The new slot is durable: the old one, wrapped under the old class,
                // must not outlive it (it would open the file under the old class).
                let stale = 1 - index
                content.header.slots[stale] = nil
                return HeaderIO.eraseSlot(content.fd, index: stale)
            }
            if rc == 0 { node.noteCachedClass(newClass) }
            return rc
        }
    }

    // MARK: Requests

    /// Answers an xattr request from a handler that fills `size` bytes (or, with size
    /// 0, reports the size it needs) and returns a count or -errno.
    func replyAttribute(_ req: fuse_req_t?, _ size: Int, _ body: (UnsafeMutablePointer<CChar>?, Int) -> Int32) {
        if size == 0 {
            let n = body(nil, 0)
            if n < 0 { fuse_reply_err(req, -n) } else { fuse_reply_xattr(req, Int(n)) }
            return
        }
        guard let buffer = malloc(size)?.assumingMemoryBound(to: CChar.self) else { return reply(req, Errno(ENOMEM)) }
        defer { memset(buffer, 0, size); free(buffer) }
        let n = body(buffer, size)
        if n < 0 { fuse_reply_err(req, -n) } else { fuse_reply_buf(req, buffer, Int(n)) }
    }

    func getxattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>, _ size: Int) {
        let node = node(ino)
        replyAttribute(req, size) { getAttribute(node, name, $0, $1) }
    }

    func listxattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ size: Int) {
        let node = node(ino)
        replyAttribute(req, size) { listAttributes(node, $0, $1) }
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
            fuse_reply_err(req, -createClasses.set(protectionClass, thread: Caller(req).thread, directory: node.key))
            return
        }
        let rc = changingDirectoryACL(node, name) { setAttribute(node, name, value, size, flags) }
        fuse_reply_err(req, -rc)
    }

    func removexattr(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ name: UnsafePointer<CChar>) {
        let node = node(ino)
        if String(cString: name) == MountAttributes.createProtection {
            createClasses.clear(thread: Caller(req).thread, directory: node.key)
            return replyOK(req)
        }
        let rc = changingDirectoryACL(node, name) { removeAttribute(node, name) }
        fuse_reply_err(req, -rc)
    }

    /// `change` of attribute `name` of `node`; a directory's ACL changing drops the
    /// spare made there (SpareFiles), before and after, as a directory's mode does. A
    /// spare would not be taken where a default ACL applies, but it would hold its inode.
    private func changingDirectoryACL(_ node: Inode, _ name: UnsafePointer<CChar>, _ change: () -> Int32) -> Int32 {
        guard node.isDirectory, Self.isACL(String(cString: name)) else { return change() }
        spares.discard()
        defer { spares.discard() }
        return change()
    }
}
