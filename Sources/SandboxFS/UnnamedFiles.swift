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
import SystemCalls

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
        do throws(Errno) { made = try createRegular(Caller(req), parent, nil, named: nil, mode: mode) } catch { return reply(req, error) }
        let (inode, created): (Inode, stat)
        do throws(Errno) { (inode, created) = try enterUnnamed(made.fd) } catch {
            close(made.fd)
            made.key.wipe()
            return reply(req, error)
        }
        guard let slot = made.header.current else { return reply(req, .io) }
        _ = openCreated(req, made, slot, as: inode, created, in: parent, fi)
    }

    /// The entry of the new unnamed file `fd` (with an O_PATH descriptor opened through
    /// /proc/self/fd), one lookup counted, and its attributes.
    func enterUnnamed(_ fd: Int32) throws(Errno) -> (Inode, stat) {
        var st = stat()
        try Errno.check(fstat(fd, &st))
        let pathFD = try withProcPath(fd) { (path) throws(Errno) in try Errno.check(Glibc.open(path, OpenFlag.path | O_CLOEXEC)) }
        return (inodes.remember(unnamed: pathFD, st), st)
    }
}
