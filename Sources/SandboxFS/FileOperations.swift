// Opening, creating, reading, writing and truncating regular files: where the
// protection classes are enforced. Opening needs the file key, and the file key
// needs its class key, so a file of an unavailable class cannot be opened (EPERM).
// The open-file entry (header, key, plaintext size) is on the inode, shared by every
// handle and every name.
import BlockStore
import CFuse
import CLinux
import DataProtection
import Foundation
import Glibc

extension SandboxFileSystem {
    // MARK: Headers and keys

    /// A new file's public random values: its ID and the nonces of its key wrap and
    /// empty last block, drawn at once from the pool's nonce streams, so that a create
    /// asks the system generator only for the key.
    struct NewFileRandomness {
        let fileID: [UInt8]
        let wrapNonce: [UInt8]
        let blockNonce: [UInt8]

        init(_ pool: BufferPool) {
            let idSize = FileHeader.fileIDSize, nonceSize = AEAD.nonceSize
            var drawn = [UInt8](repeating: 0, count: idSize + 2 * nonceSize)
            drawn.withUnsafeMutableBytes { pool.fillPublicRandom($0) }
            fileID = Array(drawn[0..<idSize])
            wrapNonce = Array(drawn[idSize..<idSize + nonceSize])
            blockNonce = Array(drawn[(idSize + nonceSize)...])
        }
    }

    /// Whether a new file of `protectionClass` may be made now, as makeHeader finds
    /// when it wraps the key: completeUnlessOpen wraps with its public key, locked too.
    func classTakesNewFiles(_ protectionClass: ProtectionClass) -> Bool {
        protectionClass == .completeUnlessOpen || device.isAvailable(protectionClass)
    }

    /// A fresh header and key for a new file of `protectionClass`; EPERM when the
    /// class cannot wrap a key now.
    func makeHeader(_ protectionClass: ProtectionClass, _ random: NewFileRandomness) -> Result<(FileHeader, SecureBuffer), Errno> {
        let key = SecureBuffer.random(count: FileKeyWrap.fileKeySize)
        let wrapped = random.wrapNonce.withUnsafeBytes {
            FileKeyWrap.wrap(key, fileID: random.fileID, as: protectionClass, device: device, nonce: $0)
        }
        guard let wrapped else {
            key.wipe()
            return .failure(.notPermitted)
        }
        let slot = FileHeader.KeySlot(generation: 1, protectionClass: protectionClass, wrappedKey: wrapped)
        return .success((FileHeader(fileID: random.fileID, slot: slot), key))
    }

    func unwrapKey(_ header: FileHeader) -> Result<SecureBuffer, Errno> {
        guard let slot = header.current else { return .failure(.io) }
        return unwrapKey(slot, of: header)
    }

    /// The key `slot` of `header` wraps; EPERM while its class is unavailable.
    func unwrapKey(_ slot: FileHeader.KeySlot, of header: FileHeader) -> Result<SecureBuffer, Errno> {
        do {
            return .success(try FileKeyWrap.unwrap(slot.wrappedKey, fileID: header.fileID,
                                                   as: slot.protectionClass, device: device))
        } catch .unavailable {
            return .failure(.notPermitted)
        } catch {
            logger.error("file key does not unwrap: damaged header or keybag")
            return .failure(.io)
        }
    }

    /// Opens a node's backing file for I/O: read-write when permitted (writes need
    /// read-modify-write), else read-only. O_NOATIME where allowed, so reading the
    /// header is not an access; loadFile clears it for the data path. The descriptor
    /// and the flags it was opened with, or -1 and errno.
    func openBacking(_ inode: Inode) -> (fd: Int32, flags: Int32) {
        // By its handle where the node has one: no walk of a /proc/self/fd path.
        if let handle = inode.handle, let mountFD = inodes.descriptors?.mountFD {
            let quiet = O_RDWR | O_CLOEXEC | OpenFlag.noAccessTime
            var fd = handle.open(on: mountFD, flags: quiet)
            if fd >= 0 { return (fd, quiet) }
            if errno == EPERM {
                fd = handle.open(on: mountFD, flags: O_RDWR | O_CLOEXEC)
                if fd >= 0 { return (fd, O_RDWR | O_CLOEXEC) }
            }
        }
        var opened: (fd: Int32, flags: Int32) = (-1, 0)
        _ = withNodePath(inode) { path -> Int32 in
            func open(_ access: Int32) -> (fd: Int32, flags: Int32) {
                let quiet = access | O_CLOEXEC | OpenFlag.noAccessTime
                let fd = Glibc.open(path, quiet)
                if fd >= 0 || errno != EPERM { return (fd, quiet) }
                return (Glibc.open(path, access | O_CLOEXEC), access | O_CLOEXEC)
            }
            opened = open(O_RDWR)
            if opened.fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM) { opened = open(O_RDONLY) }
            return opened.fd
        }
        return opened
    }

    /// The open-file entry of a regular file, one handle counted, loading header and
    /// key on first use; the key is unwrapped when the entry has none (a revoked
    /// complete file). Balance with inode.releaseOpen().
    func retainFile(_ inode: Inode) -> Result<OpenFile, Errno> {
        guard inode.isRegular else { return .failure(.invalid) }
        switch inode.retainOpen({ loadFile(inode) }) {
        case .failure(let error): return .failure(error)
        case .success(let file):
            if case .failure(let error) = checkOwnNames(inode, identity: file.content.header.fileID, fd: file.content.fd) {
                inode.releaseOpen()
                return .failure(error)
            }
            if let error = ensureKey(file) ?? finishInterruptedCut(file, inode) {
                inode.releaseOpen()
                return .failure(error)
            }
            return .success(file)
        }
    }

    /// Reads a backing file's header and size into a new entry (no key yet).
    func loadFile(_ inode: Inode) -> Result<OpenFile, Errno> {
        let (fd, statusFlags) = openBacking(inode)
        guard fd >= 0 else { return .failure(.current) }
        var header: FileHeader
        switch HeaderIO.read(fd, metadataKey: device.metadataKey) {
        case .failure(let error): close(fd); return .failure(error)
        case .success(let stored): header = stored
        }
        // A class change cut short after its new slot was synced: finish it. A raise's
        // move to a new key is finished once the keys are there (finishRekey).
        if !header.isRekeying, let stale = header.staleSlotIndex, statusFlags >= 0, statusFlags & O_ACCMODE == O_RDWR,
           HeaderIO.eraseSlot(fd, index: stale) == 0 {
            header.slots[stale] = nil
        }
        var st = stat()
        guard let slot = header.current, fstat(fd, &st) == 0 else { close(fd); return .failure(.io) }
        guard BlockLayout.isWholeBacking(Int(st.st_size)) else {
            close(fd)
            logger.error("a backing file is cut short: it reads as EIO")
            return .failure(.io)
        }
        let plainSize = BlockLayout.plainSize(backingSize: Int(st.st_size))
        var emptyBlock: [UInt8]?
        if plainSize == 0 {
            var sealed = [UInt8](repeating: 0, count: BlockLayout.blockOverhead)
            let got = sealed.withUnsafeMutableBytes { BlockIO.preadAll(fd, $0, at: BlockLayout.headerSize) }
            guard got == sealed.count else { close(fd); return .failure(.io) }
            emptyBlock = sealed
        }
        // Reading the header (and an empty file's block) was no access; the data path is.
        if statusFlags >= 0 && statusFlags & OpenFlag.noAccessTime != 0 {
            _ = fcntl(fd, F_SETFL, statusFlags & ~OpenFlag.noAccessTime)
        }
        let content = SealedFile(fd: fd, header: header, slot: slot, key: nil, plainSize: plainSize)
        content.uncheckedEmptyBlock = emptyBlock
        return .success(OpenFile(content: content))
    }

    /// Unwraps the file key if the entry has none; nil on success.
    func ensureKey(_ file: OpenFile) -> Errno? {
        if file.reading({ file.key != nil }) { return nil }
        return file.writing { () -> Errno? in
            if file.content.key != nil { return nil }
            if file.content.header.isRekeying { return finishRekey(file.content) }
            switch unwrapKey(file.content.header) {
            case .success(let key): file.content.key = key; return nil
            case .failure(let error): return error
            }
        }
    }

    /// `operation` (a data operation that answers -EPERM without the file key), run once
    /// more with the key unwrapped again if a lock took it and its class is back: a
    /// handle opened before a lock works again after unlock, as on iOS, with no reopen.
    /// The kernel may cache the pages it reads then, so the next lock must drop them.
    func restoringKey<R: SignedInteger>(_ file: OpenFile, of inode: Inode, _ operation: () -> R) -> R {
        let result = operation()
        guard result == -R(EPERM), file.reading({ file.key == nil }), ensureKey(file) == nil else { return result }
        inode.noteCachedClass(file.protectionClass)
        return operation()
    }

    /// Finishes a shrinking truncate a kill interrupted (InterruptedCut), once the key
    /// is there; the kernel, which has the size from before, is told to ask again.
    func finishInterruptedCut(_ file: OpenFile, _ inode: Inode) -> Errno? {
        if file.reading({ file.content.header.pendingCut == nil }) { return nil }
        return file.writing { () -> Errno? in
            guard file.content.header.pendingCut != nil, let key = file.content.key else { return nil }
            let before = file.content.plainSize
            let writable = fcntl(file.content.fd, F_GETFL) & O_ACCMODE == O_RDWR
            let rc = InterruptedCut.finish(file.content, key: key, pool: pool, repair: writable)
            guard rc == 0 else { return Errno(-rc) }
            if file.content.plainSize != before {
                file.content.uncheckedEmptyBlock = nil
                kernel.invalidateAttributes(inode)
                logger.notice("a truncate a kill interrupted is finished: \(before) → \(file.content.plainSize) bytes")
            }
            return nil
        }
    }

    /// Opens an empty file's block, read with its header, once the key is there: a
    /// file cut down to its first bytes would read as empty otherwise.
    func checkEmptyBlock(_ file: OpenFile) -> Errno? {
        // Every open asks: the exclusive lock only for the one open that has work to do.
        if file.reading({ file.content.uncheckedEmptyBlock == nil }) { return nil }
        return file.writing { () -> Errno? in
            guard let sealed = file.content.uncheckedEmptyBlock, let key = file.content.key else { return nil }
            guard file.content.plainSize == 0, BlockIO.openEmptyBlock(file.content, key: key, sealed: sealed) else {
                logger.error("an empty file's block does not open: cut short or altered")
                return .io
            }
            file.content.uncheckedEmptyBlock = nil
            return nil
        }
    }

    // MARK: Open, create, release

    func open(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ fi: UnsafeMutablePointer<fuse_file_info>) {
        let inode = node(ino)
        let file: OpenFile
        switch retainFile(inode) {
        case .failure(let error): return reply(req, error)
        case .success(let retained): file = retained
        }
        // An empty file is never read (the kernel knows its size): check its block now.
        if let error = checkEmptyBlock(file) {
            inode.releaseOpen()
            return reply(req, error)
        }
        // Linux truncates on O_TRUNC whatever the access mode (the kernel has checked
        // write permission).
        if fi.pointee.flags & O_TRUNC != 0 {
            let rc = resize(file, inode, Caller(req), to: 0)
            if rc != 0 { inode.releaseOpen(); return reply(req, Errno(-rc)) }
        }
        install(req, inode, file, fi, created: nil)
    }

    func create(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>, _ mode: mode_t,
                _ fi: UnsafeMutablePointer<fuse_file_info>) {
        let parent = node(parentID)
        if Self.isUnnamedFileRequest(name) { return createUnnamed(req, parent, mode, fi) }
        guard let form = backingName(req, name, in: parent) else { return }
        let backing = form.stored
        if let error = prepareName(form, in: parent) { return reply(req, error) }
        let made: CreatedFile
        switch createRegular(Caller(req), parent, form, mode: mode) {
        case .failure(let error): abandonName(form, in: parent); return reply(req, error)
        case .success(let created): made = created
        }
        guard let (inode, created) = enterCreated(made.fd, handle: made.handle, named: backing, in: parent),
              let slot = made.header.current else {
            let error = Errno.current
            close(made.fd)
            made.key.wipe()
            return reply(req, error)
        }
        vouched(inode, for: form.place)
        guard openCreated(req, made, slot, as: inode, created, in: parent, fi) else { return }
        guard spareMayServe(in: parent) else { return }
        // The spare is for the next create there, in the directory's class (this one's
        // may have been given at creation).
        let spareClass = (try? directoryClass(parent).get()) ?? slot.protectionClass
        spares.created(in: parent, mode: mode) { makeSpare(in: parent, mode: mode, spareClass) }
    }

    /// Opens the file a create just made (`made`, entered as `inode` with attributes
    /// `created`) and answers the create; false when it could not (answered with EIO).
    func openCreated(_ req: fuse_req_t?, _ made: CreatedFile, _ slot: FileHeader.KeySlot, as inode: Inode,
                     _ created: stat, in parent: Inode, _ fi: UnsafeMutablePointer<fuse_file_info>) -> Bool {
        var st = created
        // Made here, bare: no capability, and no ACL unless the directory passes one on.
        inode.noteAbsent(.capability, seenAt: 0)
        noteMadeBare(inode, in: parent)
        st.st_size = 0
        // The new key goes straight into the entry: a completeUnlessOpen file created
        // while locked could not unwrap it again.
        let content = SealedFile(fd: made.fd, header: made.header, slot: slot, key: made.key, plainSize: 0)
        guard case .success(let file) = inode.retainOpen({ .success(OpenFile(content: content)) }) else {
            reply(req, .io)
            return false
        }
        // Made here without a capability: a write has nothing to take unless set-ID
        // bits were asked for (Privileges.swift).
        if st.st_mode & (S_ISUID | S_ISGID) == 0 {
            file.privilegesCleanAt.store(privileges.value.load(ordering: .acquiring), ordering: .relaxed)
        }
        // A lock that wiped the class keys while this create ran revoked the open files
        // it saw, which this one was not yet: its key goes now (until an unlock).
        if !classTakesNewFiles(slot.protectionClass) { file.content.revokeKey() }
        install(req, inode, file, fi, created: st)
        return true
    }

    /// A spare for the next create in `parent` (SpareFiles): an unnamed file with its
    /// header and empty last block when `protectionClass` can take a new file now.
    private func makeSpare(in parent: Inode, mode: mode_t, _ protectionClass: ProtectionClass) -> (fd: Int32, contents: SpareContents?) {
        let fd = parent.withDescriptor { dpfs_open_tmpfile($0, ".", mode) }
        guard fd >= 0 else { return (fd, nil) }
        let random = NewFileRandomness(pool)
        guard case .success(let (header, key)) = makeHeader(protectionClass, random) else { return (fd, nil) }
        // A write that failed leaves whatever it wrote: a create writes it all again.
        guard writeNewContents(fd, header, key, blockNonce: random.blockNonce) == 0 else {
            key.wipe()
            return (fd, nil)
        }
        return (fd, SpareContents(protectionClass: protectionClass, header: header, key: key,
                                  handle: inodes.handle(of: fd, device: parent.key.device)))
    }

    /// Whether a file made in `parent` now is one made there later (SpareFiles): no
    /// default ACL there to pass on.
    private func spareMayServe(in parent: Inode) -> Bool {
        acls.noneSet || parent.isKnownAbsent(.defaultACL)
    }

    /// `make` (a call that makes a node: -1 and errno on failure), once more if it found
    /// the disk full while a spare held an inode, which it then gets (SpareFiles).
    func makingNode(_ make: () -> Int32) -> Int32 {
        let rc = make()
        guard rc < 0, errno == ENOSPC || errno == EDQUOT, spares.discard() else { return rc }
        return make()
    }

    /// The entry of the new file `fd` (named `name` in `parent`; its `handle` when
    /// already read), one lookup counted, and its attributes; nil and errno when they
    /// cannot be read.
    func enterCreated(_ fd: Int32, handle known: KernelFileHandle?, named name: UnsafePointer<CChar>,
                      in parent: Inode) -> (Inode, stat)? {
        var st = stat()
        guard case .success(let birth) = statWithBirth(fd, "", flags: AtFlag.emptyPath, &st) else { return nil }
        // Where handles reopen nodes, the entry needs no descriptor of its own now.
        if let handle = known ?? inodes.handle(of: fd, st) { return (inodes.remember(handle: handle, st, birth: birth), st) }
        let pathFD = pathDescriptor(of: fd, named: name, in: parent, stat: &st)
        guard pathFD >= 0 else { return nil }
        return (inodes.remember(fd: pathFD, st), st)
    }

    /// An O_PATH descriptor of the new file `fd`, opened by its name so the kernel's
    /// path for it is that name (an O_TMPFILE descriptor's shows an unnamed file);
    /// through /proc/self/fd if the name was replaced meanwhile. `made` gets the new
    /// file's attributes (-1 if they could not be read).
    func pathDescriptor(of fd: Int32, named name: UnsafePointer<CChar>, in parent: Inode, stat made: inout stat) -> Int32 {
        var found = stat()
        guard fstat(fd, &made) == 0 else { return -1 }
        let byName = parent.withDescriptor { openat($0, name, OpenFlag.path | O_NOFOLLOW | O_CLOEXEC) }
        if byName >= 0 && fstatat(byName, "", &found, AtFlag.emptyPath) == 0 && InodeKey(made) == InodeKey(found) {
            return byName
        }
        if byName >= 0 { close(byName) }
        return procPath(fd).withCString { Glibc.open($0, OpenFlag.path | O_CLOEXEC) }
    }

    /// A new file: its descriptor (read-write), header and key; its handle when a
    /// spare came with one.
    struct CreatedFile {
        let fd: Int32
        let header: FileHeader
        let key: SecureBuffer
        let handle: KernelFileHandle?
    }

    /// Creates a backing file with its header, in the class the caller gave for it
    /// (CreateClasses.swift), else the class its directory passes on, named `form`
    /// (with its name tag), or left unnamed when `form` is nil (O_TMPFILE). Nothing is
    /// created when the class cannot take a new file now (EPERM).
    func createRegular(_ caller: Caller, _ parent: Inode, _ form: BackingName?, mode: mode_t) -> Result<CreatedFile, Errno> {
        let protectionClass: ProtectionClass
        // The directory's record is checked either way: where it is missing or forged,
        // nothing is made in it.
        switch directoryClass(parent) {
        case .failure(let error): return .failure(error)
        case .success(let inherited):
            protectionClass = createClasses.take(thread: caller.thread, directory: parent.key) ?? inherited
        }
        // Unnamed until its header, empty last block and name tag are written
        // (O_TMPFILE), then linked in: a file without a header is always damage, never
        // a new file. A spare made ahead has them but the tag, when made in this class.
        let spare = form != nil && spareMayServe(in: parent) ? spares.take(in: parent, mode: mode) : nil
        let fd: Int32, header: FileHeader, key: SecureBuffer
        var rc: Int32 = 0
        if let spare, let ready = spare.contents, ready.protectionClass == protectionClass, classTakesNewFiles(protectionClass) {
            (fd, header, key) = (spare.fd, ready.header, ready.key)
        } else {
            spare?.contents?.key.wipe()
            let random = NewFileRandomness(pool)
            guard case .success(let (made, madeKey)) = makeHeader(protectionClass, random) else {
                if let spare { close(spare.fd) }
                return .failure(.notPermitted)
            }
            let opened = spare?.fd ?? makingNode { parent.withDescriptor { dpfs_open_tmpfile($0, ".", mode) } }
            guard opened >= 0 else { madeKey.wipe(); return .failure(.current) }
            (fd, header, key) = (opened, made, madeKey)
            rc = writeNewContents(fd, header, key, blockNonce: random.blockNonce)
            // A spare holding the last free block gives it back (SpareFiles).
            if rc == -ENOSPC || rc == -EDQUOT, spares.discard() {
                rc = writeNewContents(fd, header, key, blockNonce: random.blockNonce)
            }
        }
        if rc == 0, let place = form?.place {
            let tag = NameBinding.tag(identity: header.fileID, place: place, metadataKey: device.metadataKey)
            if tag.withUnsafeBytes({ fsetxattr(fd, NameBinding.attribute, $0.baseAddress, $0.count, 0) }) != 0 { rc = -errno }
        }
        if rc == 0, let form {
            let linked = parent.withDescriptor { parentFD in
                linkDescriptor(fd, into: parentFD, as: form.stored)
            }
            if linked != 0 { rc = -errno }
        }
        if rc != 0 {
            close(fd)
            key.wipe()
            return .failure(Errno(-rc))
        }
        ownership.take(caller, parent: parent, fd: fd, mode: mode)
        // A spare's descriptor is the file's in both branches above.
        return .success(CreatedFile(fd: fd, header: header, key: key, handle: spare?.contents?.handle))
    }

    /// A new file's header and its empty last block, in one write: the block follows
    /// the header (whose serialized form fills its whole area). 0 or -errno.
    private func writeNewContents(_ fd: Int32, _ header: FileHeader, _ key: SecureBuffer, blockNonce: [UInt8]) -> Int32 {
        let blockStart = BlockLayout.headerSize
        return withUnsafeTemporaryAllocation(byteCount: blockStart + BlockIO.overhead, alignment: 16) { all in
            header.write(into: all, metadataKey: device.metadataKey)
            blockNonce.withUnsafeBytes { nonce in
                BlockIO.sealBlock(cipher: header.cipher, fileID: header.fileID, key: key, block: 0, last: true,
                                  plain: UnsafeRawBufferPointer(start: nil, count: 0), nonce: nonce,
                                  into: UnsafeMutableRawBufferPointer(rebasing: all[blockStart...]))
            }
            return BlockIO.pwriteAll(fd, UnsafeRawBufferPointer(all), at: 0)
        }
    }

    /// Gives the kernel a handle on `file` (counted by the caller on `inode`): for open,
    /// or, with the new node's attributes in `created`, for create. The kernel keeps the
    /// file's pages across opens: every change reaches it through this mount, and a
    /// lock drops them itself (Revocation.swift).
    func install(_ req: fuse_req_t?, _ inode: Inode, _ file: OpenFile, _ fi: UnsafeMutablePointer<fuse_file_info>,
                 created: stat?) {
        let handle = FileHandle(inode: inode, file: file, append: fi.pointee.flags & O_APPEND != 0)
        fi.pointee.fh = UInt64(UInt(bitPattern: Unmanaged.passRetained(handle).toOpaque()))
        fi.pointee.keep_cache = 1
        // A handle for writing only writes past the page cache (direct I/O): no copy of
        // its data into pages nothing reads through it, and no getxattr of
        // security.capability before a first write, which the kernel sends only on the
        // cached path (dpfs drops privileges itself, Privileges.swift). Extracting the
        // bench tree (/usr/include) took 80,046 requests instead of 96,799: half the
        // getxattrs, and a third fewer writes (each write(2) is one request, not split
        // at pages). The cached copy was no gain: without a writeback cache each write
        // goes out at once, and reading 256 MiB right after writing them ran at the
        // speed of a cold read (850-910 MiB/s against 1,010) on the cached path too.
        if fi.pointee.flags & O_ACCMODE == O_WRONLY, writeOnlyHandlesUncached.load(ordering: .relaxed) {
            fi.pointee.direct_io = 1
        }
        let rc: Int32
        if let created {
            var entry = entryParameters(inode, created)
            rc = fuse_reply_create(req, &entry, fi)
        } else {
            rc = fuse_reply_open(req, fi)
        }
        // The request was interrupted: the kernel will send no release for this handle,
        // nor, for a new file, a forget of its entry (whose descriptor would otherwise
        // keep an unnamed file's inode and blocks until the unmount).
        if rc != 0 {
            dropHandle(fi)
            if created != nil { inodes.forget(inode, 1) }
        }
    }

    func release(_ req: fuse_req_t?, _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        if let fi { dropHandle(fi) }
        replyOK(req)
    }

    private func dropHandle(_ fi: UnsafeMutablePointer<fuse_file_info>) {
        guard fi.pointee.fh != 0 else { return }
        let handle = Unmanaged<FileHandle>.fromOpaque(Self.pointer(fi.pointee.fh)).takeRetainedValue()
        fi.pointee.fh = 0
        handle.inode.releaseOpen()
    }

    static func handle(_ fi: UnsafeMutablePointer<fuse_file_info>?) -> FileHandle? {
        guard let fi, fi.pointee.fh != 0 else { return nil }
        return Unmanaged<FileHandle>.fromOpaque(pointer(fi.pointee.fh)).takeUnretainedValue()
    }

    // MARK: Data

    func read(_ req: fuse_req_t?, _ size: Int, _ offset: off_t, _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let handle = Self.handle(fi) else { return reply(req, .badDescriptor) }
        let file = handle.file
        if file.readsBlocked.load(ordering: .acquiring) { return reply(req, .notPermitted) }
        // Through an io_uring queue, straight into the buffer the kernel takes the reply
        // from, which the queue wipes itself.
        let inPlace = KernelChannel.readReplySpace(size)
        guard let buffer = inPlace ?? malloc(max(size, 1)) else { return reply(req, Errno(ENOMEM)) }
        let n = restoringKey(file, of: handle.inode) {
            file.reading { () -> Int in
                guard let key = file.key else { return -Int(EPERM) }
                let output = UnsafeMutableRawBufferPointer(start: buffer, count: size)
                return BlockIO.read(file.content, key: key, into: output, offset: Int(offset), pool: pool)
            }
        }
        if n < 0 {
            reply(req, Errno(negative: n))
        } else {
            fuse_reply_buf(req, buffer.assumingMemoryBound(to: CChar.self), n)
        }
        guard inPlace == nil else { return }
        // Plaintext of a lockable class does not stay behind in freed memory.
        if n > 0 && file.protectionClass != .none { memset(buffer, 0, n) }
        free(buffer)
    }

    /// Writes `size` bytes at `offset` (or at the end for O_APPEND); bytes written or -errno.
    func write(_ handle: FileHandle, _ caller: Caller, _ data: UnsafeRawPointer, _ size: Int, _ offset: off_t) -> Int {
        let file = handle.file
        dropPrivileges(file, handle.inode, caller)
        return restoringKey(file, of: handle.inode) {
            file.writing {
                guard let key = file.key else { return -Int(EPERM) }
                let at = handle.append ? file.plainSize : Int(offset)
                let input = UnsafeRawBufferPointer(start: data, count: size)
                return BlockIO.write(file.content, key: key, data: input, offset: at, pool: pool)
            }
        }
    }

    func fsync(_ req: fuse_req_t?, _ dataOnly: Int32, _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let handle = Self.handle(fi) else { return reply(req, .badDescriptor) }
        replyResult(req, dataOnly != 0 ? fdatasync(handle.file.fd) : Glibc.fsync(handle.file.fd))
    }

    func fallocate(_ req: fuse_req_t?, _ mode: Int32, _ offset: off_t, _ length: off_t,
                   _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let handle = Self.handle(fi) else { return reply(req, .badDescriptor) }
        let keepSize = FallocateMode.keepSize, punchHole = FallocateMode.punchHole, zeroRange = FallocateMode.zeroRange
        // Collapse and insert range would move blocks, which are bound to their number.
        guard mode & ~(keepSize | punchHole | zeroRange) == 0 else { return reply(req, .notSupported) }
        guard offset >= 0, length > 0 else { return reply(req, .invalid) }
        let file = handle.file
        dropPrivileges(file, handle.inode, Caller(req))
        let rc: Int32
        if mode & (punchHole | zeroRange) != 0 {
            rc = restoringKey(file, of: handle.inode) {
                file.writing {
                    guard let key = file.key else { return -EPERM }
                    return BlockIO.zeroRange(file.content, key: key, offset: Int(offset), length: Int(length),
                                             extend: mode & keepSize == 0, pool: pool)
                }
            }
        } else {
            rc = restoringKey(file, of: handle.inode) {
                file.writing {
                    let end = Int(offset + length)
                    let backingEnd = BlockLayout.backingSize(plainSize: max(end, file.plainSize))
                    if CLinux.fallocate(file.fd, keepSize, 0, off_t(backingEnd)) != 0 { return -errno }
                    guard mode & keepSize == 0, end > file.plainSize else { return 0 }
                    return BlockIO.resize(file.content, key: file.key, to: end, pool: pool)
                }
            }
        }
        fuse_reply_err(req, -rc)
    }
}
