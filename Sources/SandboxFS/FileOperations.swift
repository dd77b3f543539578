// Opening, creating, reading, writing and truncating regular files: where the
// protection classes are enforced. Opening needs the file key, and the file key
// needs its class key, so a file of an unavailable class cannot be opened (EPERM).
import BlockStore
import CFuse
import CLinux
import DataProtection
import Foundation
import Glibc

extension SandboxFileSystem {
    // MARK: Headers and keys

    /// A fresh header and key for a new file of `protectionClass`; EPERM when the
    /// class cannot wrap a key now.
    func makeHeader(_ protectionClass: ProtectionClass) -> Result<(FileHeader, SecureBuffer), Errno> {
        let fileID = Sodium.randomBytes(FileHeader.fileIDSize)
        let key = SecureBuffer.random(count: FileKeyWrap.fileKeySize)
        guard let wrapped = FileKeyWrap.wrap(key, fileID: fileID, as: protectionClass, device: device) else {
            return .failure(Errno(EPERM))
        }
        let slot = FileHeader.KeySlot(generation: 1, protectionClass: protectionClass, wrappedKey: wrapped)
        return .success((FileHeader(fileID: fileID, slot: slot), key))
    }

    func unwrapKey(_ header: FileHeader) -> Result<SecureBuffer, Errno> {
        guard let slot = header.current else { return .failure(Errno(EIO)) }
        do {
            return .success(try FileKeyWrap.unwrap(slot.wrappedKey, fileID: header.fileID,
                                                   as: slot.protectionClass, device: device))
        } catch .unavailable {
            return .failure(Errno(EPERM))
        } catch {
            logger.error("file key does not unwrap: damaged header or keybag")
            return .failure(Errno(EIO))
        }
    }

    static func inodeKey(_ fd: Int32) -> InodeKey? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return InodeKey(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    /// Opens the backing file of a FUSE path for I/O: read-write when permitted (writes
    /// need read-modify-write), else read-only. OpenFlag.noAccessTime where allowed, so reading the
    /// header is not an access; retainFile clears it for the data path.
    func openBacking(_ path: UnsafePointer<CChar>) -> Int32 {
        at(path) { directory, name in
            func open(_ flags: Int32) -> Int32 {
                let fd = openat(directory, name, flags | O_CLOEXEC | O_NOFOLLOW | OpenFlag.noAccessTime)
                return fd >= 0 || errno != EPERM ? fd : openat(directory, name, flags | O_CLOEXEC | O_NOFOLLOW)
            }
            let fd = open(O_RDWR)
            if fd >= 0 || (errno != EACCES && errno != EROFS && errno != EPERM) { return fd }
            return open(O_RDONLY)
        }
    }

    /// The shared entry for an open backing file, loading header and key on first use.
    /// The key is unwrapped when the entry has none (a revoked complete file).
    func retainFile(fd: Int32, path: String) -> Result<OpenFile, Errno> {
        guard let inode = Self.inodeKey(fd) else { return .failure(Errno.current) }
        var created = false
        do {
            let file = try files.retain(inode, path: path) { () throws(Errno) -> OpenFile in
                created = true
                let statusFlags = fcntl(fd, F_GETFL)
                // Reading the header (and an empty file's block) is not an access.
                defer { if statusFlags >= 0 && statusFlags & OpenFlag.noAccessTime != 0 { _ = fcntl(fd, F_SETFL, statusFlags & ~OpenFlag.noAccessTime) } }
                var header: FileHeader
                switch HeaderIO.read(fd, metadataKey: device.metadataKey) {
                case .failure(let rc): throw rc
                case .success(let stored): header = stored
                }
                // A class change cut short after its new slot was synced: finish it.
                if let stale = header.staleSlotIndex, statusFlags >= 0, statusFlags & O_ACCMODE == O_RDWR,
                   HeaderIO.eraseSlot(fd, index: stale) == 0 {
                    header.slots[stale] = nil
                }
                guard let slot = header.current else { throw Errno(EIO) }
                var st = stat()
                guard fstat(fd, &st) == 0 else { throw Errno.current }
                guard BlockLayout.isWholeBacking(Int(st.st_size)) else {
                    logger.error("a backing file is cut short: it reads as EIO")
                    throw Errno(EIO)
                }
                let file = OpenFile(inode: inode, content: SealedFile(fd: fd, header: header, slot: slot, key: nil,
                                    plainSize: BlockLayout.plainSize(backingSize: Int(st.st_size))))
                if file.plainSize == 0 {
                    var sealed = [UInt8](repeating: 0, count: BlockLayout.blockOverhead)
                    let got = sealed.withUnsafeMutableBytes { BlockIO.preadAll(fd, $0, at: BlockLayout.headerSize) }
                    guard got == sealed.count else { throw Errno(EIO) }
                    file.content.uncheckedEmptyBlock = sealed
                }
                return file
            }
            if !created { close(fd) }
            if let rc = ensureKey(file) {
                files.release(file)
                return .failure(Errno(-rc))
            }
            return .success(file)
        } catch {
            close(fd)
            return .failure(error)
        }
    }

    /// Unwraps the file key if the entry has none; nil on success, else -errno.
    func ensureKey(_ file: OpenFile) -> Int32? {
        if file.reading({ file.key != nil }) { return nil }
        return file.writing { () -> Int32? in
            if file.key != nil { return nil }
            switch unwrapKey(file.content.header) {
            case .success(let key): file.content.key = key; return nil
            case .failure(let rc): return rc.negated
            }
        }
    }

    // MARK: Open, create, release

    func open(_ path: UnsafePointer<CChar>, _ fi: UnsafeMutablePointer<fuse_file_info>) -> Int32 {
        let fd = openBacking(path)
        guard fd >= 0 else { return -errno }
        let pathString = String(cString: path)
        switch retainFile(fd: fd, path: pathString) {
        case .failure(let rc):
            return rc.negated
        case .success(let file):
            // Linux truncates on O_TRUNC whatever the access mode (the kernel has
            // checked write permission).
            // An empty file is never read (the kernel knows its size): check its block now.
            if let rc = checkEmptyBlock(file), rc != 0 {
                files.release(file)
                return rc
            }
            if fi.pointee.flags & O_TRUNC != 0 {
                dropPrivileges(file)
                let rc = file.writing { BlockIO.resize(file.content, key: file.key, to: 0, pool: pool) }
                if rc != 0 { files.release(file); return rc }
            }
            install(file, fi)
            // Another hard link is another kernel inode: what was written through it
            // must not be hidden behind this name's cached size and pages.
            // (Not with O_TRUNC: the kernel drops the pages itself, and holds write-back
            // off until this open returns.)
            var st = stat()
            if fi.pointee.flags & O_TRUNC == 0 && fstat(file.fd, &st) == 0 && st.st_nlink > 1 { invalidate(pathString) }
            return 0
        }
    }

    func create(_ path: UnsafePointer<CChar>, _ mode: mode_t, _ fi: UnsafeMutablePointer<fuse_file_info>) -> Int32 {
        switch createRegular(path, mode: mode) {
        case .failure(let rc): return rc.negated
        case .success(let (fd, header, key)):
            guard let inode = Self.inodeKey(fd), let slot = header.current else { close(fd); return -EIO }
            // The new key goes straight into the entry: a completeUnlessOpen file created
            // while locked could not unwrap it again.
            let made = try? files.retain(inode, path: String(cString: path)) { () throws(Errno) -> OpenFile in
                OpenFile(inode: inode, content: SealedFile(fd: fd, header: header, slot: slot, key: key, plainSize: 0))
            }
            guard let file = made else { close(fd); return -EIO }
            install(file, fi)
            return 0
        }
    }

    /// Creates a backing file with its header, in the class its directory passes on.
    /// Nothing is created when the class cannot take a new file now (EPERM).
    func createRegular(_ path: UnsafePointer<CChar>, mode: mode_t) -> Result<(Int32, FileHeader, SecureBuffer), Errno> {
        if Self.isReservedName(path) { return .failure(Errno(EPERM)) }
        let protectionClass: ProtectionClass
        switch directoryClass(parentOf: path) {
        case .failure(let rc): return .failure(rc)
        case .success(let inherited): protectionClass = inherited
        }
        guard case .success(let (header, key)) = makeHeader(protectionClass) else { return .failure(Errno(EPERM)) }
        // Unnamed until its header and empty last block are written (O_TMPFILE), then
        // linked in: a file without a header is always damage, never a new file.
        let fd = Self.parentPath(path).withCString { parent in at(parent) { dpfs_open_tmpfile($0, $1, mode) } }
        guard fd >= 0 else { return .failure(Errno.current) }
        let bytes = header.serialized(metadataKey: device.metadataKey)
        var rc = bytes.withUnsafeBytes { BlockIO.pwriteAll(fd, $0, at: 0) }
        if rc == 0 { rc = BlockIO.writeEmptyFile(fd: fd, header: header, key: key) }
        if rc == 0 {
            let linked = "/proc/self/fd/\(fd)".withCString { source in
                at(path) { linkat(AT_FDCWD, source, $0, $1, AT_SYMLINK_FOLLOW) }
            }
            if linked != 0 { rc = -errno }
        }
        if rc != 0 {
            close(fd)
            key.wipe()
            return .failure(Errno(-rc))
        }
        takeOwnership(path, fd: fd, mode: mode)
        files.noteClass(protectionClass, path: String(cString: path))
        return .success((fd, header, key))
    }

    /// Opens an empty file's block, read with its header, once the key is there: a
    /// file cut down to its first bytes would read as empty otherwise. nil: nothing to check.
    func checkEmptyBlock(_ file: OpenFile) -> Int32? {
        file.writing { () -> Int32? in
            guard let sealed = file.content.uncheckedEmptyBlock, let key = file.key else { return nil }
            guard file.plainSize == 0, BlockIO.openEmptyBlock(file.content, key: key, sealed: sealed) else {
                logger.error("an empty file's block does not open: cut short or altered")
                return -EIO
            }
            file.content.uncheckedEmptyBlock = nil
            return 0
        }
    }

    func install(_ file: OpenFile, _ fi: UnsafeMutablePointer<fuse_file_info>) {
        let handle = FileHandle(file: file, append: fi.pointee.flags & O_APPEND != 0)
        fi.pointee.fh = UInt64(UInt(bitPattern: Unmanaged.passRetained(handle).toOpaque()))
        // Whether the kernel keeps this file's pages across opens is libfuse's auto_cache
        // (kept while size and mtime are unchanged: a write through another hard link,
        // which is another kernel inode, drops them). Lock revokes them itself.
    }

    func release(_ fi: UnsafeMutablePointer<fuse_file_info>) -> Int32 {
        guard let raw = UnsafeRawPointer(bitPattern: UInt(fi.pointee.fh)) else { return 0 }
        let handle = Unmanaged<FileHandle>.fromOpaque(raw).takeRetainedValue()
        fi.pointee.fh = 0
        files.release(handle.file)
        return 0
    }

    // MARK: Data

    func read(_ buffer: UnsafeMutablePointer<CChar>, _ size: Int, _ offset: off_t, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        guard let handle = Self.handle(fi) else { return -EBADF }
        let file = handle.file
        if file.readsBlocked.load(ordering: .acquiring) { return -EPERM }
        return file.reading {
            guard let key = file.key else { return -EPERM }
            let output = UnsafeMutableRawBufferPointer(start: buffer, count: size)
            return Int32(BlockIO.read(file.content, key: key, into: output, offset: Int(offset), pool: pool))
        }
    }

    func write(_ data: UnsafePointer<CChar>, _ size: Int, _ offset: off_t, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        guard let handle = Self.handle(fi) else { return -EBADF }
        let file = handle.file
        dropPrivileges(file)
        return file.writing {
            guard let key = file.key else { return -EPERM }
            let at = handle.append ? file.plainSize : Int(offset)
            let input = UnsafeRawBufferPointer(start: data, count: size)
            return Int32(BlockIO.write(file.content, key: key, data: input, offset: at, pool: pool))
        }
    }

    func truncate(_ path: UnsafePointer<CChar>?, _ size: off_t, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        guard size >= 0 else { return -EINVAL }
        if let handle = Self.handle(fi) {
            let file = handle.file
            dropPrivileges(file)
            return file.writing { BlockIO.resize(file.content, key: file.key, to: Int(size), pool: pool) }
        }
        guard let path else { return -ENOENT }
        let fd = openBacking(path)
        guard fd >= 0 else { return -errno }
        // Content changes need the file key, as on iOS: a locked file cannot be truncated.
        switch retainFile(fd: fd, path: String(cString: path)) {
        case .failure(let rc): return rc.negated
        case .success(let file):
            defer { files.release(file) }
            dropPrivileges(file)
            return file.writing { BlockIO.resize(file.content, key: file.key, to: Int(size), pool: pool) }
        }
    }

    func fsync(_ dataOnly: Int32, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        guard let handle = Self.handle(fi) else { return -EBADF }
        return Self.result(dataOnly != 0 ? fdatasync(handle.file.fd) : Glibc.fsync(handle.file.fd))
    }

    func fallocate(_ mode: Int32, _ offset: off_t, _ length: off_t, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        guard let handle = Self.handle(fi) else { return -EBADF }
        dropPrivileges(handle.file)
        let keepSize = FallocateMode.keepSize, punchHole = FallocateMode.punchHole, zeroRange = FallocateMode.zeroRange
        // Collapse and insert range would move blocks, which are bound to their number.
        guard mode & ~(keepSize | punchHole | zeroRange) == 0 else { return -EOPNOTSUPP }
        guard offset >= 0, length > 0 else { return -EINVAL }
        let file = handle.file
        if mode & (punchHole | zeroRange) != 0 {
            return file.writing {
                guard let key = file.key else { return -EPERM }
                return BlockIO.zeroRange(file.content, key: key, offset: Int(offset), length: Int(length),
                                         extend: mode & keepSize == 0, pool: pool)
            }
        }
        return file.writing {
            let end = Int(offset + length)
            let backingEnd = BlockLayout.backingSize(plainSize: max(end, file.plainSize))
            if CLinux.fallocate(file.fd, keepSize, 0, off_t(backingEnd)) != 0 { return -errno }
            guard mode & keepSize == 0, end > file.plainSize else { return 0 }
            return BlockIO.resize(file.content, key: file.key, to: end, pool: pool)
        }
    }
}

