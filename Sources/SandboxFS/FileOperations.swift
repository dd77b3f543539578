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
import SystemCalls

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
    func makeHeader(_ protectionClass: ProtectionClass, _ random: NewFileRandomness) throws(Errno) -> (FileHeader, SecureBuffer) {
        let key = SecureBuffer.random(count: FileKeyWrap.fileKeySize)
        let wrapped = random.wrapNonce.withUnsafeBytes {
            FileKeyWrap.wrap(key, fileID: random.fileID, as: protectionClass, device: device, nonce: $0)
        }
        guard let wrapped else {
            key.wipe()
            throw Errno.notPermitted
        }
        let slot = FileHeader.KeySlot(generation: 1, protectionClass: protectionClass, wrappedKey: wrapped)
        return (FileHeader(fileID: random.fileID, slot: slot), key)
    }

    func unwrapKey(_ header: FileHeader, of inode: Inode) throws(Errno) -> SecureBuffer {
        guard let slot = header.current else { throw Errno.io }
        return try unwrapKey(slot, of: header, inode)
    }

    /// The key `slot` of `header` (the file on `inode`) wraps; EPERM while its class is
    /// unavailable.
    func unwrapKey(_ slot: FileHeader.KeySlot, of header: FileHeader, _ inode: Inode) throws(Errno) -> SecureBuffer {
        do {
            return try FileKeyWrap.unwrap(slot.wrappedKey, fileID: header.fileID, as: slot.protectionClass, device: device)
        } catch .unavailable {
            throw Errno.notPermitted
        } catch {
            noteDamagedOpen(.file(id: header.fileID), inode, "a file key does not unwrap (a damaged header or keybag)")
            throw Errno.io
        }
    }

    /// Opens a node's backing file for I/O: read-write when permitted (writes need
    /// read-modify-write), else read-only. O_NOATIME where allowed, so reading the
    /// header is not an access; loadFile clears it for the data path. The descriptor
    /// and the flags it was opened with.
    func openBacking(_ inode: Inode) throws(Errno) -> (fd: Int32, flags: Int32) {
        // By its handle where the node has one: no walk of a /proc/self/fd path.
        if let handle = inode.handle, let mountFD = inodes.descriptors?.mountFD {
            let quiet = O_RDWR | O_CLOEXEC | OpenFlag.noAccessTime
            do throws(Errno) {
                return (try handle.open(on: mountFD, flags: quiet), quiet)
            } catch where error == .notPermitted {
                if let fd = try? handle.open(on: mountFD, flags: O_RDWR | O_CLOEXEC) { return (fd, O_RDWR | O_CLOEXEC) }
            } catch {
                // Any other failure: the path below tries, and says what it is.
            }
        }
        return try withNodePath(inode) { (path) throws(Errno) -> (fd: Int32, flags: Int32) in
            func open(_ access: Int32) -> (fd: Int32, flags: Int32) {
                let quiet = access | O_CLOEXEC | OpenFlag.noAccessTime
                let fd = Glibc.open(path, quiet)
                if fd >= 0 || errno != EPERM { return (fd, quiet) }
                return (Glibc.open(path, access | O_CLOEXEC), access | O_CLOEXEC)
            }
            var opened = open(O_RDWR)
            if opened.fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM) { opened = open(O_RDONLY) }
            try Errno.check(opened.fd)
            return opened
        }
    }

    /// The open-file entry of a regular file, one handle counted, loading header and
    /// key on first use; the key is unwrapped when the entry has none (a revoked
    /// complete file). Balance with inode.releaseOpen().
    func retainFile(_ inode: Inode) throws(Errno) -> OpenFile {
        guard inode.isRegular else { throw Errno.invalid }
        let file = try inode.retainOpen { () throws(Errno) in try loadFile(inode) }
        do throws(Errno) {
            try checkOwnNames(inode, identity: file.content.header.fileID, fd: file.content.fd)
            try ensureKey(file, inode)
            try finishInterruptedCut(file, inode)
        } catch {
            inode.releaseOpen()
            throw error
        }
        return file
    }

    /// Reads a backing file's header and size into a new entry (no key yet).
    func loadFile(_ inode: Inode) throws(Errno) -> OpenFile {
        let (fd, statusFlags) = try openBacking(inode)
        var header: FileHeader
        do throws(Errno) { header = try HeaderIO.read(fd, metadataKey: device.metadataKey) } catch {
            close(fd)
            if error == .io { noteDamagedOpen(.unreadableHeader(inode: inode.key.inode), inode, "a backing file's header does not open") }
            throw error
        }
        // A class change cut short after its new slot was synced: finish it. A raise's
        // move to a new key is finished once the keys are there (finishRekey).
        if !header.isRekeying, let stale = header.staleSlotIndex, statusFlags >= 0, statusFlags & O_ACCMODE == O_RDWR,
           (try? HeaderIO.eraseSlot(fd, index: stale)) != nil {
            header.slots[stale] = nil
        }
        var st = stat()
        guard let slot = header.current, fstat(fd, &st) == 0 else { close(fd); throw Errno.io }
        guard BlockLayout.isWholeBacking(Int(st.st_size)) else {
            close(fd)
            noteDamagedOpen(.file(id: header.fileID), inode, "a backing file is cut short mid-block")
            throw Errno.io
        }
        let plainSize = BlockLayout.plainSize(backingSize: Int(st.st_size))
        var emptyBlock: [UInt8]?
        if plainSize == 0 {
            var sealed = [UInt8](repeating: 0, count: BlockLayout.blockOverhead)
            let got = try? sealed.withMutableBytes { (bytes) throws(Errno) in
                try preadAll(fd, bytes, at: BlockLayout.headerSize)
            }
            guard got == sealed.count else { close(fd); throw Errno.io }
            emptyBlock = sealed
        }
        // Reading the header (and an empty file's block) was no access; the data path is.
        if statusFlags >= 0 && statusFlags & OpenFlag.noAccessTime != 0 {
            _ = fcntl(fd, F_SETFL, statusFlags & ~OpenFlag.noAccessTime)
        }
        let content = SealedFile(fd: fd, header: header, slot: slot, key: nil, plainSize: plainSize)
        content.uncheckedEmptyBlock = emptyBlock
        return OpenFile(content: content)
    }

    /// Unwraps the file key (of the file on `inode`) if the entry has none.
    func ensureKey(_ file: OpenFile, _ inode: Inode) throws(Errno) {
        guard isReadable(file) else { throw Errno.notPermitted }
        if file.reading({ file.key != nil }) { return }
        try file.writing { () throws(Errno) in
            if file.content.key != nil { return }
            if file.content.header.isRekeying {
                return try keepingModificationTime(file.content.fd) { () throws(Errno) in try finishRekey(file.content, inode) }
            }
            file.content.key = try unwrapKey(file.content.header, of: inode)
        }
    }

    /// Whether the file's class may be read now. Its key may outlive the class's: the
    /// lock wipes open files' keys after the grace period's deadline, once it holds the
    /// lock-state's lock (an unlock with a wrong passcode may hold that through its key
    /// derivation), so the deadline itself is checked. completeUnlessOpen stays readable
    /// through what is open, as on iOS: the rule new files of a class follow.
    @inline(__always)
    func isReadable(_ file: OpenFile) -> Bool {
        classTakesNewFiles(file.protectionClass)
    }

    /// `operation` (a data operation that throws EPERM without the file key), run once
    /// more with the key unwrapped again if a lock took it and its class is back: a
    /// handle opened before a lock works again after unlock, as on iOS, with no reopen.
    /// The kernel may cache the pages it reads then, so the next lock must drop them.
    @inline(__always)
    func restoringKey<R>(_ file: OpenFile, of inode: Inode, _ operation: () throws(Errno) -> R) throws(Errno) -> R {
        do throws(Errno) {
            return try operation()
        } catch {
            guard error == .notPermitted, file.reading({ file.key == nil }), (try? ensureKey(file, inode)) != nil else { throw error }
        }
        inode.noteCachedClass(file.protectionClass)
        return try operation()
    }

    /// Finishes a shrinking truncate a kill interrupted (InterruptedCut), once the key
    /// is there; the kernel, which has the size from before, is told to ask again.
    func finishInterruptedCut(_ file: OpenFile, _ inode: Inode) throws(Errno) {
        if file.reading({ file.content.header.pendingCut == nil }) { return }
        try file.writing { () throws(Errno) in
            guard file.content.header.pendingCut != nil, let key = file.content.key else { return }
            let before = file.content.plainSize
            let writable = fcntl(file.content.fd, F_GETFL) & O_ACCMODE == O_RDWR
            try InterruptedCut.finish(file.content, key: key, pool: pool, repair: writable)
            if file.content.plainSize != before {
                file.content.uncheckedEmptyBlock = nil
                kernel.invalidateAttributes(inode)
                logger.notice("a truncate a kill interrupted is finished: \(before) → \(file.content.plainSize) bytes")
            }
        }
    }

    /// Opens an empty file's block, read with its header, once the key is there: a
    /// file cut down to its first bytes would read as empty otherwise.
    func checkEmptyBlock(_ file: OpenFile) throws(Errno) {
        // Every open asks: the exclusive lock only for the one open that has work to do.
        if file.reading({ file.content.uncheckedEmptyBlock == nil }) { return }
        try file.writing { () throws(Errno) in
            guard let sealed = file.content.uncheckedEmptyBlock, let key = file.content.key else { return }
            guard file.content.plainSize == 0, BlockIO.openEmptyBlock(file.content, key: key, sealed: sealed) else {
                logger.error("an empty file's block does not open: cut short or altered")
                throw Errno.io
            }
            file.content.uncheckedEmptyBlock = nil
        }
    }

    // MARK: Open, create, release

    func open(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ fi: UnsafeMutablePointer<fuse_file_info>) {
        let inode = node(ino)
        let file: OpenFile
        do throws(Errno) { file = try retainFile(inode) } catch { return reply(req, error) }
        do throws(Errno) {
            // An empty file is never read (the kernel knows its size): check its block now.
            try checkEmptyBlock(file)
            // Linux truncates on O_TRUNC whatever the access mode (the kernel has checked
            // write permission).
            if fi.pointee.flags & O_TRUNC != 0 { try resize(file, inode, Caller(req), to: 0) }
        } catch {
            inode.releaseOpen()
            return reply(req, error)
        }
        install(req, inode, file, fi, created: nil)
    }

    func create(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>, _ mode: mode_t,
                _ fi: UnsafeMutablePointer<fuse_file_info>) {
        let parent = node(parentID)
        if Self.isUnnamedFileRequest(name) { return createUnnamed(req, parent, mode, fi) }
        guard let form = backingName(req, name, in: parent) else { return }
        let backing = form.stored
        do throws(Errno) { try prepareName(form, in: parent) } catch { return reply(req, error) }
        let made: CreatedFile
        do throws(Errno) { made = try createRegular(Caller(req), parent, form, named: name, mode: mode) } catch {
            abandonName(form, in: parent)
            return reply(req, error)
        }
        let (inode, created): (Inode, stat)
        do throws(Errno) {
            (inode, created) = try enterCreated(made.fd, handle: made.handle, named: backing, in: parent)
        } catch {
            close(made.fd)
            made.key.wipe()
            return reply(req, error)
        }
        guard let slot = made.header.current else { return reply(req, .io) }
        vouched(inode, for: form.place)
        guard openCreated(req, made, slot, as: inode, created, in: parent, fi) else { return }
        guard spareMayServe(in: parent) else { return }
        // The spare is for the next create there, in the directory's class (this one's
        // may have been given at creation, or taken from its database).
        let spareClass = (try? directoryClass(parent)) ?? slot.protectionClass
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
        guard let file = try? inode.retainOpen({ OpenFile(content: content) }) else {
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
        guard let fd = try? parent.systemCall({ dpfs_open_tmpfile($0, ".", mode) }) else { return (-1, nil) }
        let random = NewFileRandomness(pool)
        guard let (header, key) = try? makeHeader(protectionClass, random) else { return (fd, nil) }
        // A write that failed leaves whatever it wrote: a create writes it all again.
        guard (try? BlockIO.writeNewFile(fd: fd, header: header, key: key, metadataKey: device.metadataKey,
                                                blockNonce: random.blockNonce)) != nil else {
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
    /// the disk full while a spare held an inode, which it then gets (SpareFiles). What
    /// it returns; its errno, thrown.
    func makingNode(_ make: () -> Int32) throws(Errno) -> Int32 {
        let rc = make()
        guard rc < 0 else { return rc }
        guard errno == ENOSPC || errno == EDQUOT, spares.discard() else { throw Errno.current }
        return try Errno.check(make())
    }

    /// `makingNode` for a call on `parent`'s descriptor; the error that kept the
    /// descriptor from being reopened, thrown too.
    func makingNode(in parent: Inode, _ make: (Int32) -> Int32) throws(Errno) -> Int32 {
        try parent.withDescriptor { (fd) throws(Errno) in try makingNode { make(fd) } }
    }

    /// The entry of the new file `fd` (named `name` in `parent`; its `handle` when
    /// already read), one lookup counted, and its attributes; the error that kept them
    /// from being read.
    func enterCreated(_ fd: Int32, handle known: KernelFileHandle?, named name: UnsafePointer<CChar>,
                      in parent: Inode) throws(Errno) -> (Inode, stat) {
        var st = stat()
        let birth = try statWithBirth(fd, "", flags: AtFlag.emptyPath, &st)
        // Where handles reopen nodes, the entry needs no descriptor of its own now.
        if let handle = known ?? inodes.handle(of: fd, st) { return (inodes.remember(handle: handle, st, birth: birth), st) }
        let pathFD = try pathDescriptor(of: fd, named: name, in: parent, stat: &st)
        return (inodes.remember(fd: pathFD, st), st)
    }

    /// An O_PATH descriptor of the new file `fd`, opened by its name so the kernel's
    /// path for it is that name (an O_TMPFILE descriptor's shows an unnamed file);
    /// through /proc/self/fd if the name was replaced meanwhile. `made` gets the new
    /// file's attributes.
    func pathDescriptor(of fd: Int32, named name: UnsafePointer<CChar>, in parent: Inode,
                        stat made: inout stat) throws(Errno) -> Int32 {
        var found = stat()
        try Errno.check(fstat(fd, &made))
        let byName = (try? parent.systemCall { openat($0, name, OpenFlag.path | O_NOFOLLOW | O_CLOEXEC) }) ?? -1
        if byName >= 0 && fstatat(byName, "", &found, AtFlag.emptyPath) == 0 && InodeKey(made) == InodeKey(found) {
            return byName
        }
        if byName >= 0 { close(byName) }
        return try withProcPath(fd) { (path) throws(Errno) in try Errno.check(Glibc.open(path, OpenFlag.path | O_CLOEXEC)) }
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
    /// (CreateClasses.swift), else its database's when `name` is an SQLite companion's
    /// (SQLiteCompanions.swift), else the class its directory passes on; named `form`
    /// (with its name tag; `name` in plaintext), or left unnamed when `form` is nil
    /// (O_TMPFILE). Nothing is created when the class cannot take a new file now (EPERM).
    func createRegular(_ caller: Caller, _ parent: Inode, _ form: BackingName?, named name: UnsafePointer<CChar>?,
                       mode: mode_t) throws(Errno) -> CreatedFile {
        // The directory's record is checked either way: where it is missing or forged,
        // nothing is made in it.
        let inherited = try directoryClass(parent)
        let protectionClass = createClasses.take(thread: caller.thread, directory: parent.key)
            ?? name.flatMap { companionClass($0, in: parent) } ?? inherited
        // Unnamed until its header, empty last block and name tag are written
        // (O_TMPFILE), then linked in: a file without a header is always damage, never
        // a new file. A spare made ahead has them but the tag, when made in this class.
        // The header reaches the disk by the directory's next fsync (NewFileSyncs.swift).
        let spare = form != nil && spareMayServe(in: parent) ? spares.take(in: parent, mode: mode) : nil
        let fd: Int32, header: FileHeader, key: SecureBuffer
        var blockNonce: [UInt8]?  // a new file's, whose contents are still to be written
        if let spare, let ready = spare.contents, ready.protectionClass == protectionClass, classTakesNewFiles(protectionClass) {
            (fd, header, key) = (spare.fd, ready.header, ready.key)
        } else {
            spare?.contents?.key.wipe()
            let random = NewFileRandomness(pool)
            let made: FileHeader, madeKey: SecureBuffer
            do throws(Errno) { (made, madeKey) = try makeHeader(protectionClass, random) } catch {
                if let spare { close(spare.fd) }
                throw error
            }
            let opened: Int32
            if let spare {
                opened = spare.fd
            } else {
                do throws(Errno) { opened = try makingNode(in: parent) { dpfs_open_tmpfile($0, ".", mode) } } catch {
                    madeKey.wipe()
                    throw error
                }
            }
            (fd, header, key) = (opened, made, madeKey)
            blockNonce = random.blockNonce
        }
        do throws(Errno) {
            if let blockNonce {
                do throws(Errno) {
                    try BlockIO.writeNewFile(fd: fd, header: header, key: key, metadataKey: device.metadataKey,
                                             blockNonce: blockNonce)
                } catch where error == .noSpace || error == .quotaExceeded {
                    // A spare holding the last free block gives it back (SpareFiles).
                    guard spares.discard() else { throw error }
                    try BlockIO.writeNewFile(fd: fd, header: header, key: key, metadataKey: device.metadataKey,
                                             blockNonce: blockNonce)
                }
            }
            if let place = form?.place {
                let tag = NameBinding.tag(identity: header.fileID, place: place, metadataKey: device.metadataKey)
                try Errno.check(tag.withUnsafeBytes { fsetxattr(fd, NameBinding.attribute, $0.baseAddress, $0.count, 0) })
            }
            if let form {
                try parent.withDescriptor { (parentFD) throws(Errno) in try linkDescriptor(fd, into: parentFD, as: form.stored) }
                newFileSyncs.created(form.stored, in: parent.key)
            }
        } catch {
            close(fd)
            key.wipe()
            throw error
        }
        ownership.take(caller, parent: parent, fd: fd, mode: mode)
        // A spare's descriptor is the file's in both branches above.
        return CreatedFile(fd: fd, header: header, key: key, handle: spare?.contents?.handle)
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
        // its data into pages nothing reads through it, no getxattr of
        // security.capability before a first write, which the kernel sends only on the
        // cached path (dpfs drops privileges itself, Privileges.swift), and one request
        // per write(2), not one per page. The cached copy would be no gain: without a
        // writeback cache each write goes out at once, and data read right after it was
        // written comes at the speed of a cold read either way (docs/benchmarks.md).
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
        if file.readsBlocked.load(ordering: .acquiring) || !isReadable(file) { return reply(req, .notPermitted) }
        // Through an io_uring queue, straight into the buffer the kernel takes the reply
        // from, which the queue wipes itself.
        let inPlace = KernelChannel.readReplySpace(size)
        guard let buffer = inPlace ?? malloc(max(size, 1)) else { return reply(req, Errno(ENOMEM)) }
        var n = 0
        do throws(Errno) {
            n = try restoringKey(file, of: handle.inode) { () throws(Errno) -> Int in
                try file.reading { () throws(Errno) -> Int in
                    guard let key = file.key else { throw Errno.notPermitted }
                    let output = UnsafeMutableRawBufferPointer(start: buffer, count: size)
                    return try BlockIO.read(file.content, key: key, into: output, offset: Int(offset), pool: pool)
                }
            }
            fuse_reply_buf(req, buffer.assumingMemoryBound(to: CChar.self), n)
        } catch {
            if error == .io { noteDamagedRead(file, handle.inode) }
            reply(req, error)
        }
        guard inPlace == nil else { return }
        // Plaintext of a lockable class does not stay behind in freed memory.
        if n > 0 && file.protectionClass != .none { memset(buffer, 0, n) }
        free(buffer)
    }

    /// Writes `size` bytes at `offset` (or at the end for O_APPEND); bytes written.
    func write(_ handle: FileHandle, _ caller: Caller, _ data: UnsafeRawPointer, _ size: Int,
               _ offset: off_t) throws(Errno) -> Int {
        let file = handle.file
        dropPrivileges(file, handle.inode, caller)
        return try restoringKey(file, of: handle.inode) { () throws(Errno) -> Int in
            try file.writing { () throws(Errno) -> Int in
                guard let key = file.key else { throw Errno.notPermitted }
                let at = handle.append ? file.plainSize : Int(offset)
                let input = UnsafeRawBufferPointer(start: data, count: size)
                return try BlockIO.write(file.content, key: key, data: input, offset: at, pool: pool)
            }
        }
    }

    func fsync(_ req: fuse_req_t?, _ dataOnly: Int32, _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let handle = Self.handle(fi) else { return reply(req, .badDescriptor) }
        replying(req) { () throws(Errno) in
            _ = try Errno.check(dataOnly != 0 ? fdatasync(handle.file.fd) : Glibc.fsync(handle.file.fd))
        }
    }

    func fallocate(_ req: fuse_req_t?, _ mode: Int32, _ offset: off_t, _ length: off_t,
                   _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let handle = Self.handle(fi) else { return reply(req, .badDescriptor) }
        let keepSize = FallocateMode.keepSize, punchHole = FallocateMode.punchHole, zeroRange = FallocateMode.zeroRange
        // Collapse and insert range would move blocks, which are bound to their number.
        guard mode & ~(keepSize | punchHole | zeroRange) == 0 else { return reply(req, .notSupported) }
        guard offset >= 0, length > 0 else { return reply(req, .invalid) }
        guard let end = BlockLayout.end(offset: Int(offset), count: Int(length)) else { return reply(req, .fileTooLarge) }
        let file = handle.file
        dropPrivileges(file, handle.inode, Caller(req))
        replying(req) { () throws(Errno) in
            if mode & (punchHole | zeroRange) != 0 {
                try restoringKey(file, of: handle.inode) { () throws(Errno) in
                    try file.writing { () throws(Errno) in
                        guard let key = file.key else { throw Errno.notPermitted }
                        try BlockIO.zeroRange(file.content, key: key, offset: Int(offset), length: Int(length),
                                              extend: mode & keepSize == 0, pool: pool)
                    }
                }
            } else {
                try restoringKey(file, of: handle.inode) { () throws(Errno) in
                    try file.writing { () throws(Errno) in
                        let backingEnd = BlockLayout.backingSize(plainSize: max(end, file.plainSize))
                        try Errno.check(CLinux.fallocate(file.fd, keepSize, 0, off_t(backingEnd)))
                        guard mode & keepSize == 0, end > file.plainSize else { return }
                        try BlockIO.resize(file.content, key: file.key, to: end, pool: pool)
                    }
                }
            }
        }
    }
}
