// Names: lookup and forget, making nodes (mknod, mkdir, symlink, link), removing them
// (unlink, rmdir) and rename. Each is one *at() call on the parent's O_PATH descriptor
// with the backing name (Names.swift); a node made or found gets one lookup counted.
import BlockStore
import CFuse
import CLinux
import DataProtection
import Glibc

extension SandboxFileSystem {
    /// The entry for `name` in `parent` (a backing name), one lookup counted, reached by
    /// the name at `place`; `made`: by a name this daemon just made and tagged.
    func enter(_ parent: Inode, _ name: UnsafePointer<CChar>, place: NamePlace?, made: Bool = false) -> Result<(Inode, stat), Errno> {
        var st = stat()
        let found = parent.withDescriptor { entry(named: name, in: $0, &st, made: made) }
        let inode: Inode
        switch found {
        case .failure(let error): return .failure(error)
        case .success(let entered): inode = entered
        }
        if made { vouched(inode, for: place) } else { reached(inode, by: place) }
        Self.presentSize(of: inode, &st)
        return .success((inode, st))
    }

    /// The entry for `name` in the directory `directoryFD`, one lookup counted, its
    /// attributes in `st` (which already holds the name's when `statted`): made from
    /// its file handle where one names the node, so that a lookup opens nothing (a stat,
    /// lookup's commonest caller, needs no descriptor), else from an O_PATH descriptor.
    /// A file the kernel forgot gets the handle it had, without asking for it again,
    /// unless this daemon just `made` the name (DormantHandles.swift); `birth`: the
    /// birth time read with `st`.
    func entry(named name: UnsafePointer<CChar>, in directoryFD: Int32, _ st: inout stat,
               statted: Bool = false, birth birthRead: FileBirth? = nil, made: Bool = false) -> Result<Inode, Errno> {
        if inodes.descriptors != nil {
            var birth = birthRead
            if !statted {
                switch statWithBirth(directoryFD, name, &st) {
                case .failure(let error): return .failure(error)
                case .success(let read): birth = read
                }
            }
            if !made, let birth, let inode = inodes.rememberDormant(st, birth: birth) { return .success(inode) }
            if let handle = inodes.handle(of: name, in: directoryFD, matching: st) {
                return .success(inodes.remember(handle: handle, st, birth: birth))
            }
        }
        let fd = openat(directoryFD, name, OpenFlag.path | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.current) }
        // The name may have moved meanwhile: the descriptor's own attributes count.
        guard fstatat(fd, "", &st, AtFlag.emptyPath | AT_SYMLINK_NOFOLLOW) == 0 else {
            let error = Errno.current
            close(fd)
            return .failure(error)
        }
        return .success(inodes.remember(fd: fd, st))
    }

    /// Answers a request that made `form` in `parent` with its new entry.
    func replyMade(_ req: fuse_req_t?, _ parent: Inode, _ form: BackingName) {
        switch enter(parent, form.stored, place: form.place, made: true) {
        case .failure(let error): reply(req, error)
        case .success(let (inode, st)):
            noteMadeBare(inode, in: parent)
            replyEntry(req, inode, st)
        }
    }

    /// `backingName` for a request: nil once `req` has been answered with why there is none.
    func backingName(_ req: fuse_req_t?, _ name: UnsafePointer<CChar>, in directory: Inode) -> BackingName? {
        switch backingName(name, in: directory) {
        case .failure(let error): reply(req, error); return nil
        case .success(let form): return form
        }
    }

    func lookup(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>) {
        let parent = node(parentID)
        guard let form = backingName(req, name, in: parent) else { return }
        switch enter(parent, form.stored, place: form.place) {
        case .failure(let error):
            if error == .noEntry {
                // A negative entry, cached for the entry timeout.
                var entry = fuse_entry_param()
                entry.entry_timeout = Self.entryTimeout
                fuse_reply_entry(req, &entry)
            } else {
                reply(req, error)
            }
        case .success(let (inode, st)):
            replyEntry(req, inode, st)
        }
    }

    func forget(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ count: UInt64) {
        inodes.forget(node(ino), count)
        fuse_reply_none(req)
    }

    func forgetMulti(_ req: fuse_req_t?, _ count: Int, _ forgets: UnsafeMutablePointer<fuse_forget_data>?) {
        if let forgets {
            inodes.forget(UnsafeBufferPointer(start: forgets, count: count)) { node($0) }
        }
        fuse_reply_none(req)
    }

    func mknod(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>, _ mode: mode_t, _ rdev: dev_t) {
        let parent = node(parentID)
        guard let form = backingName(req, name, in: parent) else { return }
        let backing = form.stored
        let caller = Caller(req)
        if let error = prepareName(form, in: parent) { return reply(req, error) }
        if mode & S_IFMT == S_IFREG {
            // A regular file made by mknod still needs a header and a key.
            switch createRegular(caller, parent, form, mode: mode) {
            case .failure(let error): abandonName(form, in: parent); return reply(req, error)
            case .success(let made):
                made.key.wipe()
                close(made.fd)
                return replyMade(req, parent, form)
            }
        }
        guard makingNode({ parent.withDescriptor { mknodat($0, backing, mode, rdev) } }) == 0 else { return failMaking(req, form, in: parent) }
        ownership.take(caller, parent: parent, name: backing, mode: mode)
        replyMade(req, parent, form)
    }

    func mkdir(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>, _ mode: mode_t) {
        let parent = node(parentID)
        guard let form = backingName(req, name, in: parent) else { return }
        let backing = form.stored
        let inherited: ProtectionClass
        switch directoryClass(parent) {
        case .failure(let error): return reply(req, error)
        case .success(let parentClass): inherited = parentClass
        }
        if let error = prepareName(form, in: parent) { return reply(req, error) }
        guard makingNode({ parent.withDescriptor { mkdirat($0, backing, mode) } }) == 0 else { return failMaking(req, form, in: parent) }
        storeDirectoryClass(parent, backing, inherited, directoryID: DirectoryClassRecord.newDirectoryID(), place: form.place)
        ownership.take(Caller(req), parent: parent, name: backing)
        replyMade(req, parent, form)
    }

    func symlink(_ req: fuse_req_t?, _ target: UnsafePointer<CChar>, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>) {
        let parent = node(parentID)
        guard let form = backingName(req, name, in: parent) else { return }
        let backing = form.stored
        let storedTarget: String
        switch backingTarget(target) {
        case .failure(let error): return reply(req, error)
        case .success(let stored): storedTarget = stored
        }
        func discardTarget() { if LongTarget.length(of: storedTarget) != nil { LongTargetFiles.discard(storedTarget, sandbox: rootFD) } }
        if let error = prepareName(form, in: parent) { discardTarget(); return reply(req, error) }
        guard makingNode({ parent.withDescriptor { symlinkat(storedTarget, $0, backing) } }) == 0 else {
            let error = errno
            discardTarget()
            errno = error
            return failMaking(req, form, in: parent)
        }
        ownership.take(Caller(req), parent: parent, name: backing)
        replyMade(req, parent, form)
    }

    func link(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ newParentID: fuse_ino_t, _ newName: UnsafePointer<CChar>) {
        let inode = node(ino)
        let newParent = node(newParentID)
        guard let form = backingName(req, newName, in: newParent) else { return }
        let backing = form.stored
        if let error = prepareName(form, in: newParent) { return reply(req, error) }
        // The new name's tag first (a regular file's: directories have no links).
        var identity: [UInt8]?
        if inode.isRegular {
            let tagged = inode.withDescriptor { fd -> Result<[UInt8], Errno> in
                guard let id = self.identity(ofNode: fd, type: S_IFREG) else { return .failure(.io) }
                let rc = retag(fd, identity: id, adding: form.place, removing: nil)
                return rc == 0 ? .success(id) : .failure(Errno(-rc))
            }
            switch tagged {
            case .failure(let error): abandonName(form, in: newParent); return reply(req, error)
            case .success(let id): identity = id
            }
        }
        let linked = inode.withDescriptor { fd in
            newParent.withDescriptor { parentFD in linkDescriptor(fd, into: parentFD, as: backing) }
        }
        guard linked == 0 else {
            let error = errno
            if let identity { _ = inode.withDescriptor { retag($0, identity: identity, adding: nil, removing: form.place) } }
            errno = error
            return failMaking(req, form, in: newParent)
        }
        vouched(inode, for: form.place)
        switch attributes(inode) {
        case .failure(let error): reply(req, error)
        case .success(let st):
            inodes.retain(inode)
            replyEntry(req, inode, st)
        }
    }

    func unlink(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>) {
        let parent = node(parentID)
        guard let form = backingName(req, name, in: parent) else { return }
        using(req, parent) { unlink(req, $0, form) }
    }

    /// unlink in the parent's descriptor `parentFD`.
    private func unlink(_ req: fuse_req_t?, _ parentFD: Int32, _ form: BackingName) {
        let backing = form.stored
        var st = stat()
        guard fstatat(parentFD, backing, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return reply(req, .current) }
        let longTarget = LongTargetFiles.lastStandIn(parentFD, backing, st)
        defer { if let longTarget, fstatat(parentFD, backing, &st, AT_SYMLINK_NOFOLLOW) != 0 { LongTargetFiles.discard(longTarget, sandbox: rootFD) } }
        // A last link is freed by the reapers (a directory gets unlinkat's EISDIR). An
        // open file stays alive through its descriptors; its space comes back when the
        // last handle closes and the kernel forgets it.
        guard st.st_nlink == 1 && st.st_mode & S_IFMT != S_IFDIR else {
            // A file that keeps other names loses this one's tag once the name is gone.
            let linked = st.st_mode & S_IFMT == S_IFREG ? try? taggedNode(parentFD, backing).get() : nil
            defer { if let linked { close(linked.fd) } }
            let rc = unlinkat(parentFD, backing, 0)
            if rc == 0 {
                removeSideFile(parentFD, form)
                if let linked {
                    departed(linked.status, from: form.place)
                    _ = retag(linked.fd, identity: linked.identity, adding: nil, removing: form.place)
                    noteFreedIfUnlinked(linked)
                }
            }
            return replyResult(req, rc)
        }
        // A file the kernel still knows: the entry's O_PATH descriptor would hold its
        // blocks until the kernel forgets it, so once it has no name and no handle (a
        // link or an open may still come first) its data is cut away.
        let known = st.st_mode & S_IFMT == S_IFREG ? inodes.existing(InodeKey(st)) : nil
        var then: (@Sendable () -> Void)?
        if let known { then = { known.discardIfUnlinked() } }
        // (The kernel keeps the node until this reply: its forget comes after the note.)
        if reaper.remove(parentFD, backing, then: then) {
            inodes.noteFreed(InodeKey(st))
            removeSideFile(parentFD, form)
            return replyOK(req)
        }
        let rc = unlinkat(parentFD, backing, 0)
        let error = errno
        if rc == 0 {
            inodes.noteFreed(InodeKey(st))
            known?.discardIfUnlinked()
            removeSideFile(parentFD, form)
        }
        fuse_reply_err(req, rc == 0 ? 0 : error)
    }

    func rmdir(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>) {
        let parent = node(parentID)
        guard let form = backingName(req, name, in: parent) else { return }
        let rc = parent.withDescriptor { fd -> Int32 in
            let rc = unlinkat(fd, form.stored, AT_REMOVEDIR)
            if rc == 0 { removeSideFile(fd, form) }
            return rc
        }
        // The spare may be the removed directory's: no create can come there now.
        if rc == 0 { spares.discard() }
        replyResult(req, rc)
    }

    func rename(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>,
                _ newParentID: fuse_ino_t, _ newName: UnsafePointer<CChar>, _ flags: UInt32) {
        let parent = node(parentID), newParent = node(newParentID)
        guard let from = backingName(req, name, in: parent), let to = backingName(req, newName, in: newParent) else { return }
        if let error = prepareName(to, in: newParent) { return reply(req, error) }
        let exchange: UInt32 = 2  // RENAME_EXCHANGE: both names stay, each side file stays right
        let rc = parent.withDescriptor { fromFD in
            newParent.withDescriptor { toFD -> Int32 in
                renameTagged(fromFD, from, toFD, to, flags, exchange: flags & exchange != 0)
            }
        }
        replyResult(req, rc)
    }

    /// renameat2 with the moved nodes' name tags kept right: each node gets its new
    /// name's tag before the rename and loses its old name's after it (a node that
    /// loses its name to the rename, if it keeps other links, loses that name's tag).
    private func renameTagged(_ fromFD: Int32, _ from: BackingName, _ toFD: Int32, _ to: BackingName,
                              _ flags: UInt32, exchange: Bool) -> Int32 {
        // A node whose identity cannot be read (or that cannot be opened to read it:
        // EMFILE) would arrive where its tags never let it open: refused. A damaged
        // node being replaced gets no tag work.
        let source: TaggedNode?
        switch taggedNode(fromFD, from.stored) {
        case .failure(let error): errno = error.rawValue; return -1
        case .success(let found): source = found
        }
        let targetFound = taggedNode(toFD, to.stored)
        let target = try? targetFound.get()
        defer {
            if let source { close(source.fd) }
            if let target { close(target.fd) }
        }
        let sameName = from.place == to.place
        var tagged: [(TaggedNode, NamePlace?)] = []
        func untag() { for (node, place) in tagged { _ = retag(node.fd, identity: node.identity, adding: nil, removing: place) } }
        if let source, !sameName {
            let rc = retag(source.fd, identity: source.identity, adding: to.place, removing: nil)
            if rc != 0 { errno = -rc; return -1 }
            tagged.append((source, to.place))
        }
        if exchange, let target, !sameName {
            let rc = retag(target.fd, identity: target.identity, adding: from.place, removing: nil)
            if rc != 0 { untag(); errno = -rc; return -1 }
            tagged.append((target, from.place))
        }
        let replaced = exchange || flags & RenameFlag.noReplace != 0 ? nil : lastLinkReplaced(toFD, to.stored, found: targetFound)
        let replacedTarget = exchange || flags & RenameFlag.noReplace != 0 || sameName ? nil : LongTargetFiles.lastStandIn(toFD, to.stored)
        guard renameat2(fromFD, from.stored, toFD, to.stored, flags) == 0 else {
            let error = errno
            untag()
            errno = error
            return -1
        }
        if let replacedTarget { LongTargetFiles.discard(replacedTarget, sandbox: rootFD) }
        // (The kernel keeps the replaced node until this reply: its forget comes after.)
        if let replaced { inodes.noteFreed(replaced) }
        // A directory replaced may be the spare's (SpareFiles): no create comes there now.
        if !exchange, let target, target.status.st_mode & S_IFMT == S_IFDIR { spares.discard() }
        if sameName { return 0 }
        // A node the rename replaced may still be opened by the kernel (an open that
        // raced the rename looked it up before): its entry holds it open, as the
        // kernel's own inode would on a local filesystem, until the kernel forgets it;
        // reopened from its handle once gone, it would meet ESTALE.
        if !exchange, let target, let known = inodes.existing(InodeKey(target.status)) { known.holdOpen() }
        if !exchange { removeSideFile(fromFD, from) }
        if let source {
            if let known = inodes.existing(InodeKey(source.status)) { vouched(known, for: to.place) }
            departed(source.status, from: from.place)
            _ = retag(source.fd, identity: source.identity, adding: nil, removing: from.place)
        }
        if let target {
            if exchange {
                if let known = inodes.existing(InodeKey(target.status)) { vouched(known, for: from.place) }
                departed(target.status, from: to.place)
                _ = retag(target.fd, identity: target.identity, adding: nil, removing: to.place)
            } else if target.status.st_mode & S_IFMT == S_IFREG && target.status.st_nlink > 1 {
                departed(target.status, from: to.place)
                _ = retag(target.fd, identity: target.identity, adding: nil, removing: to.place)
                noteFreedIfUnlinked(target)
            }
        }
        return 0
    }

    /// A file that had other names when one went: if they went too meanwhile (an
    /// unlink of another name at the same moment), its number is free now.
    private func noteFreedIfUnlinked(_ node: TaggedNode) {
        var now = stat()
        if fstat(node.fd, &now) == 0 && now.st_nlink == 0 { inodes.noteFreed(InodeKey(now)) }
    }

    /// Before a rename over `name` in `directoryFD`, whose node is `found`: the regular
    /// file that would lose its last name there, whose number may then come back.
    private func lastLinkReplaced(_ directoryFD: Int32, _ name: UnsafePointer<CChar>,
                                  found: Result<TaggedNode?, Errno>) -> InodeKey? {
        var st = stat()
        switch found {
        case .success(let node?): st = node.status
        case .success(nil): return nil  // no such name, or not a regular file or directory
        case .failure: guard fstatat(directoryFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        }
        return st.st_mode & S_IFMT == S_IFREG && st.st_nlink == 1 ? InodeKey(st) : nil
    }

    /// Before a long name's entry is made: its side file. nil, or the error to reply.
    func prepareName(_ form: BackingName, in parent: Inode) -> Errno? {
        guard form.sideFile != nil else { return nil }
        let rc = parent.withDescriptor { fd -> Int32 in
            let rc = writeSideFile(fd, form)
            if rc != 0 { errno = -rc }
            return rc
        }
        return rc == 0 ? nil : .current
    }

    /// A long name's side file whose entry was not made (and does not exist) goes again.
    func abandonName(_ form: BackingName, in parent: Inode) {
        guard form.sideFile != nil else { return }
        _ = parent.withDescriptor { fd -> Int32 in
            var st = stat()
            if fstatat(fd, form.stored, &st, AT_SYMLINK_NOFOLLOW) != 0 { removeSideFile(fd, form) }
            return 0
        }
    }

    /// Replies with the error of a call that failed to make `form`, tidying its side file.
    func failMaking(_ req: fuse_req_t?, _ form: BackingName, in parent: Inode) {
        let error = Errno.current
        abandonName(form, in: parent)
        reply(req, error)
    }
}
