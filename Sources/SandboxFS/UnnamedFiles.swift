// Unnamed files made through the mount: an open with O_TMPFILE reaches the daemon as
// FUSE_TMPFILE, which FuseLoop/tmpfile_request.c hands to create with the name "/" (the one its
// dentry has). The file is made as a create makes one (its header in the class its
// directory passes on, its owner, the directory's default ACL through the backing
// filesystem) but neither tagged nor linked: a link through the mount names it later
// (Namespace.link writes the tag first), and one never linked goes with its last
// descriptor. Its entry keeps an O_PATH descriptor of its own for its whole life
// (InodeTable.remember(unnamed:)).
import BlockStore
import CFuse
import Glibc

extension SandboxFileSystem {
    /// Whether `name` is the one an O_TMPFILE open sends (FuseLoop/tmpfile_request.c hands its
    /// FUSE_TMPFILE to create): a name the kernel looks up never holds a slash.
    static func isUnnamedFileRequest(_ name: UnsafePointer<CChar>) -> Bool {
        name[0] == 0x2f && name[1] == 0
    }

    /// An open with O_TMPFILE in `parent`: a file with its header in the class the
    /// directory passes on, and no name until a link gives it one (through the mount,
    /// which then writes its name tag). Its backing file is unnamed too: it goes when its
    /// last descriptor here closes, or with the daemon.
    func createUnnamed(_ req: fuse_req_t?, _ parent: Inode, _ mode: mode_t, _ fi: UnsafeMutablePointer<fuse_file_info>) {
        let made: CreatedFile
        switch createRegular(Caller(req), parent, nil, mode: mode) {
        case .failure(let error): return reply(req, error)
        case .success(let created): made = created
        }
        guard let (inode, created) = enterUnnamed(made.fd), let slot = made.header.current else {
            let error = Errno.current
            close(made.fd)
            made.key.wipe()
            return reply(req, error)
        }
        _ = openCreated(req, made, slot, as: inode, created, in: parent, fi)
    }

    /// The entry of the new unnamed file `fd` (with an O_PATH descriptor opened through
    /// /proc/self/fd), one lookup counted, and its attributes.
    func enterUnnamed(_ fd: Int32) -> (Inode, stat)? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let pathFD = procPath(fd).withCString { Glibc.open($0, OpenFlag.path | O_CLOEXEC) }
        guard pathFD >= 0 else { return nil }
        return (inodes.remember(unnamed: pathFD, st), st)
    }
}
