// Extended attributes. `user.dpfs.protection` is the file's class (read from its
// header) or a directory's class for new children; setting it on a file rewraps the
// file key only. The mount root also answers `user.dpfs.control` with the path of the
// control socket, so the CLI finds the daemon from the mountpoint. Other attributes
// are stored on the backing node as they are.
import CFuse
import CLinux
import DataProtection
import Glibc

extension SandboxFileSystem {
    static let reservedPrefix = "user.dpfs."

    func backingPath(_ path: UnsafePointer<CChar>) -> String {
        device.directory.sandboxPath + String(cString: path)
    }

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
        guard fstatat(rootFD, Self.relative(path), &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return st.st_mode & S_IFMT
    }

    /// The class of a regular file, read from its header.
    func fileClass(_ path: UnsafePointer<CChar>) -> Result<ProtectionClass, FSErrno> {
        let fd = openat(rootFD, Self.relative(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return .failure(FSErrno(-errno)) }
        defer { close(fd) }
        switch readHeader(fd) {
        case .failure(let rc): return .failure(rc)
        case .success(nil): return .success(directoryClass(parentOf: path))
        case .success(let header?):
            guard let slot = header.current else { return .failure(FSErrno(-EIO)) }
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
            case S_IFDIR: return Self.reply(directoryClass(Self.relative(path)).name, value, size)
            case S_IFREG:
                switch fileClass(path) {
                case .success(let protectionClass): return Self.reply(protectionClass.name, value, size)
                case .failure(let rc): return rc.value
                }
            default: return -ENODATA
            }
        }
        if attribute.hasPrefix(Self.reservedPrefix) { return -ENODATA }
        let n = lgetxattr(backingPath(path), name, value, size)
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
            case S_IFDIR: return setDirectoryClass(Self.relative(path), protectionClass)
            case S_IFREG: return setFileClass(path, protectionClass)
            default: return -EPERM
            }
        }
        if attribute.hasPrefix(Self.reservedPrefix) { return -EPERM }
        return Self.result(lsetxattr(backingPath(path), name, value, size, flags))
    }

    func listxattr(_ path: UnsafePointer<CChar>, _ list: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
        let backing = backingPath(path)
        let needed = llistxattr(backing, nil, 0)
        guard needed >= 0 else { return -errno }
        var names = [CChar](repeating: 0, count: needed)
        let got = needed == 0 ? 0 : llistxattr(backing, &names, needed)
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
            // A file always has a class; a directory falls back to the sandbox default.
            guard nodeType(path) == S_IFDIR else { return -EPERM }
            return Self.result(lremovexattr(backingPath(path), name))
        }
        if attribute.hasPrefix(Self.reservedPrefix) { return -ENODATA }
        return Self.result(lremovexattr(backingPath(path), name))
    }

    /// Rewraps the file key under `newClass`, writing the spare header slot and
    /// syncing it; the content is never re-encrypted. Needs the current key (EPERM).
    func setFileClass(_ path: UnsafePointer<CChar>, _ newClass: ProtectionClass) -> Int32 {
        let fd = openBacking(Self.relative(path))
        guard fd >= 0 else { return -errno }
        let pathString = String(cString: path)
        switch retainFile(fd: fd, path: pathString, parentClass: { directoryClass(parentOf: path) }) {
        case .failure(let rc): return rc.value
        case .success(let file):
            defer { files.release(file) }
            let rc = file.writing { () -> Int32 in
                guard let key = file.key, let current = file.header.current else { return -EPERM }
                if current.protectionClass == newClass { return 0 }
                guard let wrapped = FileKeyWrap.wrap(key, fileID: file.fileID, as: newClass, device: device) else {
                    return -EPERM
                }
                let slot = FileHeader.KeySlot(generation: current.generation + 1, protectionClass: newClass, wrappedKey: wrapped)
                let index = file.header.spareSlotIndex
                let bytes = file.header.serializedSlot(slot)
                let written = bytes.withUnsafeBytes { BlockIO.pwriteAll(file.fd, $0, at: FileHeader.slotOffset(index)) }
                if written != 0 { return written }
                guard fdatasync(file.fd) == 0 else { return -errno }
                file.header.slots[index] = slot
                file.protectionClass = newClass
                return 0
            }
            if rc == 0 { files.noteClass(newClass, path: pathString) }
            return rc
        }
    }
}
