// The store of long symlink targets (LongTarget): one file per target at the sandbox
// root, written before its symlink is made and removed after the symlink's last name
// is gone, so a crash leaves at most an unused file and never a symlink without one.
import DataProtection
import Glibc
import SystemCalls

public enum LongTargetFiles {
    /// The backing symlink's contents for `target`: its sealed form, or for a target
    /// too long for that, a stand-in whose file is written now.
    public static func store(_ target: [UInt8], cipher: NameCipher, sandbox: Int32) throws(Errno) -> String {
        let sealed = cipher.sealTarget(target)
        if sealed.utf8.count < Int(PATH_MAX) { return sealed }
        let standIn = LongTarget.makeStandIn(length: target.count)
        let bytes = Array(cipher.sealTarget(target, standIn: standIn).utf8)
        let fd = openat(sandbox, LongTarget.fileName(of: standIn), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Errno.current }
        defer { close(fd) }
        do throws(Errno) {
            try bytes.withBytes { (buffer) throws(Errno) in try pwriteAll(fd, buffer, at: 0) }
            try Errno.check(fdatasync(fd))
        } catch {
            discard(standIn, sandbox: sandbox)
            throw error
        }
        return standIn
    }

    /// The plaintext of a backing symlink's contents; nil when forged or damaged (or
    /// a long target's file is missing).
    public static func open(_ stored: String, cipher: NameCipher, sandbox: Int32) -> [UInt8]? {
        guard LongTarget.length(of: stored) != nil else { return cipher.openTarget(stored) }
        guard let sealed = read(LongTarget.fileName(of: stored), sandbox: sandbox) else { return nil }
        return cipher.openTarget(sealed, standIn: stored)
    }

    /// Removes a stand-in's file (its symlink's last name is gone, or was never made).
    public static func discard(_ standIn: String, sandbox: Int32) {
        _ = unlinkat(sandbox, LongTarget.fileName(of: standIn), 0)
    }

    /// The stand-in the symlink `name` in `directoryFD` holds when it is the last name of
    /// a long target's symlink: its file goes once the name does.
    public static func lastStandIn(_ directoryFD: Int32, _ name: UnsafePointer<CChar>) -> String? {
        var st = stat()
        guard fstatat(directoryFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return lastStandIn(directoryFD, name, st)
    }

    /// As above, for a name whose status is known.
    public static func lastStandIn(_ directoryFD: Int32, _ name: UnsafePointer<CChar>, _ st: stat) -> String? {
        guard st.st_mode & S_IFMT == S_IFLNK, st.st_size == LongTarget.standInLength, st.st_nlink == 1 else { return nil }
        var buffer = [CChar](repeating: 0, count: LongTarget.standInLength + 1)
        let n = readlinkat(directoryFD, name, &buffer, buffer.count)
        guard n == LongTarget.standInLength else { return nil }
        let stored = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return LongTarget.length(of: stored) != nil ? stored : nil
    }

    private static func read(_ name: String, sandbox: Int32) -> String? {
        let fd = openat(sandbox, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // A sealed target of PATH_MAX bytes, encoded, with room to spare.
        var buffer = [UInt8](repeating: 0, count: 2 * Int(PATH_MAX))
        guard let n = try? buffer.withMutableBytes( { (bytes) throws(Errno) in try preadAll(fd, bytes, at: 0) }),
              n > 0, n < buffer.count else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }
}
