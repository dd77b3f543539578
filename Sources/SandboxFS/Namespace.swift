// Names: lookup and forget, making nodes (mknod, mkdir, symlink, link), removing them
// (unlink, rmdir) and rename. Each is one *at() call on the parent's O_PATH descriptor
// with the backing name (Names.swift); a node made or found gets one lookup counted.
import BlockStore
import CFuse
import CLinux
import DataProtection
import Glibc
import SystemCalls

extension SandboxFileSystem {
    /// The entry for `name` in `parent` (a backing name), one lookup counted, reached by
    /// the name at `place`; `made`: by a name this daemon just made and tagged.
    func enter(_ parent: Inode, _ name: UnsafePointer<CChar>, place: NamePlace?,
               made: Bool = false) throws(Errno) -> (Inode, stat) {
        var st = stat()
        let inode = try parent.withDescriptor { (fd) throws(Errno) in try entry(named: name, in: fd, &st, made: made) }
        if made { vouched(inode, for: place) } else { reached(inode, by: place) }
        Self.presentSize(of: inode, &st)
        return (inode, st)
    }

    /// The entry for `name` in the directory `directoryFD`, one lookup counted, its
    /// attributes in `st` (which already holds the name's when `statted`): made from
    /// its file handle where one names the node, so that a lookup opens nothing (a stat,
    /// lookup's commonest caller, needs no descriptor), else from an O_PATH descriptor.
    /// A file the kernel forgot gets the handle it had, without asking for it again,
    /// unless this daemon just `made` the name (DormantHandles.swift); `birth`: the
    /// birth time read with `st`.
    func entry(named name: UnsafePointer<CChar>, in directoryFD: Int32, _ st: inout stat,
               statted: Bool = false, birth birthRead: FileBirth? = nil, made: Bool = false) throws(Errno) -> Inode {
        if inodes.descriptors != nil {
            var birth = birthRead
            if !statted { birth = try statWithBirth(directoryFD, name, &st) }
            if !made, let birth, let inode = inodes.rememberDormant(st, birth: birth) { return inode }
            if let handle = inodes.handle(of: name, in: directoryFD, matching: st) {
                return inodes.remember(handle: handle, st, birth: birth)
            }
        }
        let fd = try Errno.check(openat(directoryFD, name, OpenFlag.path | O_NOFOLLOW | O_CLOEXEC))
        // The name may have moved meanwhile: the descriptor's own attributes count.
        guard fstatat(fd, "", &st, AtFlag.emptyPath | AT_SYMLINK_NOFOLLOW) == 0 else {
            let error = Errno.current
            close(fd)
            throw error
        }
        return inodes.remember(fd: fd, st)
    }

    /// Answers a request that made `form` in `parent` with its new entry.
    func replyMade(_ req: fuse_req_t?, _ parent: Inode, _ form: BackingName) {
        let (inode, st): (Inode, stat)
        do throws(Errno) { (inode, st) = try enter(parent, form.stored, place: form.place, made: true) } catch {
            return reply(req, error)
        }
        noteMadeBare(inode, in: parent)
        replyEntry(req, inode, st)
    }

    /// `backingName` for a request: nil once `req` has been answered with why there is none.
    func backingName(_ req: fuse_req_t?, _ name: UnsafePointer<CChar>, in directory: Inode) -> BackingName? {
        do throws(Errno) { return try backingName(name, in: directory) } catch {
            reply(req, error)
            return nil
        }
    }

    func lookup(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>) {
        let parent = node(parentID)
        guard let form = backingName(req, name, in: parent) else { return }
        let (inode, st): (Inode, stat)
        do throws(Errno) { (inode, st) = try enter(parent, form.stored, place: form.place) } catch {
            guard error == .noEntry else { return reply(req, error) }
            // A negative entry, cached for the entry timeout.
            var entry = fuse_entry_param()
            entry.entry_timeout = Self.entryTimeout
            fuse_reply_entry(req, &entry)
            return
        }
        replyEntry(req, inode, st)
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
        do throws(Errno) { try prepareName(form, in: parent) } catch { return reply(req, error) }
        if mode & S_IFMT == S_IFREG {
            // A regular file made by mknod still needs a header and a key.
            do throws(Errno) {
                let made = try createRegular(caller, parent, form, named: name, mode: mode)
                made.key.wipe()
                close(made.fd)
            } catch {
                abandonName(form, in: parent)
                return reply(req, error)
            }
            return replyMade(req, parent, form)
        }
        do throws(Errno) { _ = try makingNode(in: parent) { mknodat($0, backing, mode, rdev) } } catch {
            return failMaking(req, form, in: parent, error)
        }
        ownership.take(caller, parent: parent, name: backing, mode: mode)
        replyMade(req, parent, form)
    }

    func mkdir(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>, _ mode: mode_t) {
        let parent = node(parentID)
        guard let form = backingName(req, name, in: parent) else { return }
        let backing = form.stored
        let inherited: ProtectionClass
        do throws(Errno) {
            inherited = try directoryClass(parent)
            try prepareName(form, in: parent)
        } catch {
            return reply(req, error)
        }
        do throws(Errno) { _ = try makingNode(in: parent) { mkdirat($0, backing, mode) } } catch {
            return failMaking(req, form, in: parent, error)
        }
        // A record that could not be stored reads as damage (EIO) in the new directory.
        try? storeDirectoryClass(parent, backing, inherited, directoryID: DirectoryClassRecord.newDirectoryID(),
                                 place: form.place)
        ownership.take(Caller(req), parent: parent, name: backing)
        replyMade(req, parent, form)
    }

    func symlink(_ req: fuse_req_t?, _ target: UnsafePointer<CChar>, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>) {
        let parent = node(parentID)
        guard let form = backingName(req, name, in: parent) else { return }
        let backing = form.stored
        let storedTarget: String
        do throws(Errno) { storedTarget = try backingTarget(target) } catch { return reply(req, error) }
        func discardTarget() { if LongTarget.length(of: storedTarget) != nil { LongTargetFiles.discard(storedTarget, sandbox: rootFD) } }
        do throws(Errno) { try prepareName(form, in: parent) } catch { discardTarget(); return reply(req, error) }
        do throws(Errno) { _ = try makingNode(in: parent) { symlinkat(storedTarget, $0, backing) } } catch {
            discardTarget()
            return failMaking(req, form, in: parent, error)
        }
        ownership.take(Caller(req), parent: parent, name: backing)
        replyMade(req, parent, form)
    }

    func link(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ newParentID: fuse_ino_t, _ newName: UnsafePointer<CChar>) {
        let inode = node(ino)
        let newParent = node(newParentID)
        guard let form = backingName(req, newName, in: newParent) else { return }
        let backing = form.stored
        do throws(Errno) { try prepareName(form, in: newParent) } catch { return reply(req, error) }
        // The new name's tag first (a regular file's: directories have no links).
        var identity: [UInt8]?
        if inode.isRegular {
            do throws(Errno) {
                identity = try inode.withDescriptor { (fd) throws(Errno) -> [UInt8] in
                    guard let id = self.identity(ofNode: fd, type: S_IFREG) else { throw Errno.io }
                    try retag(fd, identity: id, adding: form.place, removing: nil)
                    return id
                }
            } catch {
                abandonName(form, in: newParent)
                return reply(req, error)
            }
        }
        do throws(Errno) {
            try inode.withDescriptor { (fd) throws(Errno) in
                try newParent.withDescriptor { (parentFD) throws(Errno) in try linkDescriptor(fd, into: parentFD, as: backing) }
            }
        } catch {
            if let identity {
                try? inode.withDescriptor { (fd) throws(Errno) in
                    try retag(fd, identity: identity, adding: nil, removing: form.place)
                }
            }
            return failMaking(req, form, in: newParent, error)
        }
        // An app's own unnamed file (O_TMPFILE) gets its first name here, its header
        // perhaps still unwritten, as a file the daemon links in does at a create.
        if inode.isRegular { newFileSyncs.created(backing, in: newParent.key) }
        vouched(inode, for: form.place)
        let st: stat
        do throws(Errno) { st = try attributes(inode) } catch { return reply(req, error) }
        inodes.retain(inode)
        replyEntry(req, inode, st)
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
            let linked = st.st_mode & S_IFMT == S_IFREG ? try? taggedNode(parentFD, backing) : nil
            defer { if let linked { close(linked.fd) } }
            return replying(req) { () throws(Errno) in
                try Errno.check(unlinkat(parentFD, backing, 0))
                removeSideFile(parentFD, form)
                if let linked {
                    departed(linked.status, from: form.place)
                    try? retag(linked.fd, identity: linked.identity, adding: nil, removing: form.place)
                    noteFreedIfUnlinked(linked)
                }
            }
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
        replying(req) { () throws(Errno) in
            try Errno.check(unlinkat(parentFD, backing, 0))
            inodes.noteFreed(InodeKey(st))
            known?.discardIfUnlinked()
            removeSideFile(parentFD, form)
        }
    }

    func rmdir(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>) {
        let parent = node(parentID)
        guard let form = backingName(req, name, in: parent) else { return }
        replying(req) { () throws(Errno) in
            try parent.withDescriptor { (fd) throws(Errno) in
                try Errno.check(unlinkat(fd, form.stored, AT_REMOVEDIR))
                removeSideFile(fd, form)
            }
            // The spare may be the removed directory's: no create can come there now.
            spares.discard()
        }
    }

    func rename(_ req: fuse_req_t?, _ parentID: fuse_ino_t, _ name: UnsafePointer<CChar>,
                _ newParentID: fuse_ino_t, _ newName: UnsafePointer<CChar>, _ flags: UInt32) {
        let parent = node(parentID), newParent = node(newParentID)
        guard let from = backingName(req, name, in: parent), let to = backingName(req, newName, in: newParent) else { return }
        do throws(Errno) { try prepareName(to, in: newParent) } catch { return reply(req, error) }
        let exchange: UInt32 = 2  // RENAME_EXCHANGE: both names stay, each side file stays right
        replying(req) { () throws(Errno) in
            try parent.withDescriptor { (fromFD) throws(Errno) in
                try newParent.withDescriptor { (toFD) throws(Errno) in
                    try renameTagged(fromFD, from, toFD, to, flags, exchange: flags & exchange != 0)
                }
            }
        }
    }

    /// renameat2 with the moved nodes' name tags kept right: each node gets its new
    /// name's tag before the rename and loses its old name's after it (a node that
    /// loses its name to the rename, if it keeps other links, loses that name's tag).
    private func renameTagged(_ fromFD: Int32, _ from: BackingName, _ toFD: Int32, _ to: BackingName,
                              _ flags: UInt32, exchange: Bool) throws(Errno) {
        // A node whose identity cannot be read (or that cannot be opened to read it:
        // EMFILE) would arrive where its tags never let it open: refused. A damaged
        // node being replaced gets no tag work.
        let source = try taggedNode(fromFD, from.stored)
        var target: TaggedNode?
        var targetUnread = false
        do throws(Errno) { target = try taggedNode(toFD, to.stored) } catch { targetUnread = true }
        defer {
            if let source { close(source.fd) }
            if let target { close(target.fd) }
        }
        let sameName = from.place == to.place
        var tagged: [(TaggedNode, NamePlace?)] = []
        func untag() { for (node, place) in tagged { try? retag(node.fd, identity: node.identity, adding: nil, removing: place) } }
        if let source, !sameName {
            try retag(source.fd, identity: source.identity, adding: to.place, removing: nil)
            tagged.append((source, to.place))
        }
        if exchange, let target, !sameName {
            do throws(Errno) { try retag(target.fd, identity: target.identity, adding: from.place, removing: nil) } catch {
                untag()
                throw error
            }
            tagged.append((target, from.place))
        }
        let replaced = exchange || flags & RenameFlag.noReplace != 0
            ? nil : lastLinkReplaced(toFD, to.stored, found: target, unread: targetUnread)
        let replacedTarget = exchange || flags & RenameFlag.noReplace != 0 || sameName ? nil : LongTargetFiles.lastStandIn(toFD, to.stored)
        guard renameat2(fromFD, from.stored, toFD, to.stored, flags) == 0 else {
            let error = Errno.current
            untag()
            throw error
        }
        if let replacedTarget { LongTargetFiles.discard(replacedTarget, sandbox: rootFD) }
        // (The kernel keeps the replaced node until this reply: its forget comes after.)
        if let replaced { inodes.noteFreed(replaced) }
        // A directory replaced may be the spare's (SpareFiles): no create comes there now.
        if !exchange, let target, target.status.st_mode & S_IFMT == S_IFDIR { spares.discard() }
        if sameName { return }
        // A node the rename replaced may still be opened by the kernel (an open that
        // raced the rename looked it up before): its entry holds it open, as the
        // kernel's own inode would on a local filesystem, until the kernel forgets it;
        // reopened from its handle once gone, it would meet ESTALE.
        if !exchange, let target, let known = inodes.existing(InodeKey(target.status)) { known.holdOpen() }
        if !exchange { removeSideFile(fromFD, from) }
        if let source {
            if let known = inodes.existing(InodeKey(source.status)) { vouched(known, for: to.place) }
            departed(source.status, from: from.place)
            try? retag(source.fd, identity: source.identity, adding: nil, removing: from.place)
        }
        if let target {
            if exchange {
                if let known = inodes.existing(InodeKey(target.status)) { vouched(known, for: from.place) }
                departed(target.status, from: to.place)
                try? retag(target.fd, identity: target.identity, adding: nil, removing: to.place)
            } else if target.status.st_mode & S_IFMT == S_IFREG && target.status.st_nlink > 1 {
                departed(target.status, from: to.place)
                try? retag(target.fd, identity: target.identity, adding: nil, removing: to.place)
                noteFreedIfUnlinked(target)
            }
        }
    }

    /// A file that had other names when one went: if they went too meanwhile (an
    /// unlink of another name at the same moment), its number is free now.
    private func noteFreedIfUnlinked(_ node: TaggedNode) {
        var now = stat()
        if fstat(node.fd, &now) == 0 && now.st_nlink == 0 { inodes.noteFreed(InodeKey(now)) }
    }

    /// Before a rename over `name` in `directoryFD`, whose node is `found` (`unread`:
    /// it could not be read): the regular file that would lose its last name there,
    /// whose number may then come back.
    private func lastLinkReplaced(_ directoryFD: Int32, _ name: UnsafePointer<CChar>,
                                  found: TaggedNode?, unread: Bool) -> InodeKey? {
        var st = stat()
        if let found {
            st = found.status
        } else if unread {
            guard fstatat(directoryFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        } else {
            return nil  // no such name, or not a regular file or directory
        }
        return st.st_mode & S_IFMT == S_IFREG && st.st_nlink == 1 ? InodeKey(st) : nil
    }

    /// Before a long name's entry is made: its side file.
    func prepareName(_ form: BackingName, in parent: Inode) throws(Errno) {
        guard form.sideFile != nil else { return }
        try parent.withDescriptor { (fd) throws(Errno) in try writeSideFile(fd, form) }
    }

    /// A long name's side file whose entry was not made (and does not exist) goes again.
    func abandonName(_ form: BackingName, in parent: Inode) {
        guard form.sideFile != nil else { return }
        _ = try? parent.withDescriptor { fd in
            var st = stat()
            if fstatat(fd, form.stored, &st, AT_SYMLINK_NOFOLLOW) != 0 { removeSideFile(fd, form) }
        }
    }

    /// Replies with `error`, of a call that failed to make `form`, tidying its side file.
    func failMaking(_ req: fuse_req_t?, _ form: BackingName, in parent: Inode, _ error: Errno) {
        abandonName(form, in: parent)
        reply(req, error)
    }
}
