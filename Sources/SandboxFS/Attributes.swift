// Extended attributes. `user.dpfs.protection` is the file's class (read from its
// header) or a directory's class for new children; setting it on a file rewraps the
// file key only. The mount root also answers `user.dpfs.control` with the path of the
// control socket, so the CLI finds the daemon from the mountpoint. Other user.*
// attributes are stored sealed (SealedAttributes.swift); the other namespaces
// (system.*, trusted.*, security.*) are stored on the backing node as they are.
import BlockStore
import CFuse
import CLinux
import DataProtection
import Glibc

extension SandboxFileSystem {
    static let reservedPrefix = "user.dpfs."

    /// Copies `text` out as an attribute value, or reports its size when `size` is 0.
    static func reply(_ text: String, _ value: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
        let bytes = Array(text.utf8)
        if size == 0 { return Int32(bytes.count) }
        guard size >= bytes.count, let value else { return -ERANGE }
        bytes.withUnsafeBytes { UnsafeMutableRawPointer(value).copyMemory(from: $0.start, byteCount: bytes.count) }
        return Int32(bytes.count)
    }

    func nodeType(_ path: UnsafePointer<CChar>) -> mode_t? {
        var st = stat()
        guard at(path, { fstatat($0, $1, &st, AT_SYMLINK_NOFOLLOW) }) == 0 else { return nil }
        return st.st_mode & S_IFMT
    }

    /// The authenticated header of the regular file at `path`.
    func header(at path: UnsafePointer<CChar>) -> Result<FileHeader, Errno> {
        // OpenFlag.noAccessTime: reading metadata from the header is not reading the file.
        var fd = at(path) { openat($0, $1, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | OpenFlag.noAccessTime) }
        if fd < 0 && errno == EPERM { fd = at(path) { openat($0, $1, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) } }
        guard fd >= 0 else { return .failure(Errno.current) }
        defer { close(fd) }
        return HeaderIO.read(fd, metadataKey: device.metadataKey)
    }

    /// The class of a regular file, read from its header.
    func fileClass(_ path: UnsafePointer<CChar>) -> Result<ProtectionClass, Errno> {
        switch header(at: path) {
        case .failure(let rc): return .failure(rc)
        case .success(let header):
            guard let slot = header.current else { return .failure(Errno(EIO)) }
            return .success(slot.protectionClass)
        }
    }

    func getxattr(_ path: UnsafePointer<CChar>, _ name: UnsafePointer<CChar>, _ value: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
        let attribute = String(cString: name)
        if attribute == MountAttributes.controlSocket {
            guard strcmp(path, "/") == 0 else { return -ENODATA }
            return Self.reply(controlSocketPath, value, size)
        }
        if attribute == Self.protectionAttribute {
            switch nodeType(path) {
            case nil: return -errno
            case S_IFDIR:
                switch directoryClass(path) {
                case .success(let protectionClass): return Self.reply(protectionClass.name, value, size)
                case .failure(let rc): return rc.negated
                }
            case S_IFREG:
                switch fileClass(path) {
                case .success(let protectionClass): return Self.reply(protectionClass.name, value, size)
                case .failure(let rc): return rc.negated
                }
            default: return -ENODATA
            }
        }
        if attribute.hasPrefix(Self.reservedPrefix) { return -ENODATA }
        if Self.isSealed(attribute) { return getSealedAttribute(path, name, value, size) }
        let n = withNodePath(path) { $1 ? CLinux.getxattr($0, name, value, size) : lgetxattr($0, name, value, size) }
        return n < 0 ? -errno : Int32(n)
    }

    func setxattr(_ path: UnsafePointer<CChar>, _ name: UnsafePointer<CChar>, _ value: UnsafePointer<CChar>?,
                  _ size: Int, _ flags: Int32) -> Int32 {
        let attribute = String(cString: name)
        if attribute == Self.protectionAttribute {
            let bytes = value.map { UnsafeRawBufferPointer(start: $0, count: size) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
            guard let protectionClass = ProtectionClass(name: String(decoding: bytes, as: UTF8.self)) else { return -EINVAL }
            switch nodeType(path) {
            case nil: return -errno
            case S_IFDIR: return setDirectoryClass(path, protectionClass)
            case S_IFREG: return setFileClass(path, protectionClass)
            default: return -EPERM
            }
        }
        if attribute.hasPrefix(Self.reservedPrefix) { return -EPERM }
        if Self.isSealed(attribute) { return setSealedAttribute(path, name, value, size, flags) }
        let rc = withNodePath(path) { $1 ? CLinux.setxattr($0, name, value, size, flags) : lsetxattr($0, name, value, size, flags) }
        guard rc == 0 else { return -errno }
        if attribute == Self.capabilityAttribute { notePrivilegeGranted() }
        if attribute.hasPrefix("system.posix_acl") { invalidate(String(cString: path)) }
        return 0
    }

    func listxattr(_ path: UnsafePointer<CChar>, _ list: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
        var names: [CChar] = []
        let got = withNodePath(path) { backing, follow -> Int in
            let list = { (buffer: UnsafeMutablePointer<CChar>?, count: Int) in
                follow ? CLinux.listxattr(backing, buffer, count) : llistxattr(backing, buffer, count)
            }
            let needed = list(nil, 0)
            guard needed > 0 else { return needed }
            names = [CChar](repeating: 0, count: needed)
            return list(&names, needed)
        }
        guard got >= 0 else { return -errno }
        var stored = Array(names[0..<got])
        let type = nodeType(path)
        let ours = Array(Self.protectionAttribute.utf8CString)
        let listed = stored.split(separator: 0).contains { Array($0) + [0] == ours }
        if (type == S_IFREG || type == S_IFDIR) && !listed { stored += ours }
        if size == 0 { return Int32(stored.count) }
        guard size >= stored.count, let list else { return -ERANGE }
        stored.withUnsafeBytes { UnsafeMutableRawPointer(list).copyMemory(from: $0.start, byteCount: stored.count) }
        return Int32(stored.count)
    }

    func removexattr(_ path: UnsafePointer<CChar>, _ name: UnsafePointer<CChar>) -> Int32 {
        let attribute = String(cString: name)
        if attribute == Self.protectionAttribute {
            // A directory goes back to the sandbox default. A file always has a class:
            // removing the attribute gives it the class its directory passes on (so
            // rsync -X and cp --preserve=xattr from a filesystem without it work).
            switch nodeType(path) {
            case S_IFDIR: return setDirectoryClass(path, device.defaultProtection)
            case S_IFREG:
                switch directoryClass(parentOf: path) {
                case .success(let inherited): return setFileClass(path, inherited)
                case .failure(let rc): return rc.negated
                }
            default: return -ENODATA
            }
        } else if attribute.hasPrefix(Self.reservedPrefix) {
            return -ENODATA
        }
        let rc = withNodePath(path) { $1 ? CLinux.removexattr($0, name) : lremovexattr($0, name) }
        guard rc == 0 else { return -errno }
        if attribute.hasPrefix("system.posix_acl") { invalidate(String(cString: path)) }
        return 0
    }

    /// Rewraps the file key under `newClass`, writing the spare header slot and
    /// syncing it; the content is never re-encrypted. Needs the current key (EPERM).
    func setFileClass(_ path: UnsafePointer<CChar>, _ newClass: ProtectionClass) -> Int32 {
        let fd = openBacking(path)
        guard fd >= 0 else { return -errno }
        let pathString = String(cString: path)
        switch retainFile(fd: fd, path: pathString) {
        case .failure(let rc): return rc.negated
        case .success(let file):
            defer { files.release(file) }
            let content = file.content
            let rc = file.writing { () -> Int32 in
                guard let key = file.key, let current = content.header.current else { return -EPERM }
                if current.protectionClass == newClass { return 0 }
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
            if rc == 0 { files.noteClass(newClass, path: pathString) }
            return rc
        }
    }
}
