// Writing data with a protection class. Apple's `data.write(to:options:)` honours
// `.completeFileProtection` and its siblings; on Linux Foundation drops those bits and
// the method cannot be replaced, so these are the calls to write instead.
import CLinux
import DPFSProtocol
import Foundation
import Glibc

extension Data {
    /// `write(to:options:)` that honours the file-protection options
    /// (`.completeFileProtection`, `.completeFileProtectionUnlessOpen`,
    /// `.completeFileProtectionUntilFirstUserAuthentication`, `.noFileProtection`) as iOS
    /// does; without one it is Foundation's own write (the file keeps or takes its
    /// directory's class). `.atomic` and `.withoutOverwriting` work as in Foundation.
    public func writeProtected(to url: URL, options: Data.WritingOptions = []) throws {
        guard let protection = options.fileProtection else {
            return try write(to: url, options: options)
        }
        try write(to: url, protection: protection, options: options)
    }

    /// Writes the data into a file of class `protection`. A new file is created in that
    /// class (the class given at creation, as iOS does), so it can be made wherever
    /// the class can take a new file now — a `.noFileProtection` file in an
    /// untilFirstAuth directory before the first unlock too; an existing file of
    /// another class is moved to a stronger class before it is emptied, so a refused
    /// class leaves its old content as it was, and to a weaker one after. Throws CocoaError with EPERM inside when the
    /// class (or an existing file's) is not available now.
    public func write(to url: URL, protection: FileProtectionType, options: Data.WritingOptions = []) throws {
        let path = try url.sandboxPath(writing: true, creating: true)
        guard let protectionClass = protection.dpfsClass else { throw FileErrors.cocoa(EINVAL, path: path, writing: true) }
        let atomic = options.contains(.atomic)
        let exclusive = options.contains(.withoutOverwriting)
        if exclusive && SandboxCheck.exists(path) { throw FileErrors.cocoa(EEXIST, path: path, writing: true) }
        let target = atomic ? try ProtectedFile.temporary(beside: path, as: protectionClass)
                            : try ProtectedFile.open(path, exclusive: exclusive, as: protectionClass)
        do {
            if atomic { try target.takeClass(protectionClass) } else { try target.takeClassEmptied(protectionClass) }
            try withUnsafeBytes { try target.writeAll($0) }
            try target.close()
            if atomic, rename(target.path, path) != 0 { throw FileErrors.cocoa(errno, path: path, writing: true) }
        } catch {
            target.abandon(unlinking: atomic)
            throw error
        }
    }
}

/// A descriptor being written by Data.write(to:protection:), with its path for errors.
private final class ProtectedFile {
    let fd: Int32
    let path: String
    private var isOpen = true

    private init(fd: Int32, path: String) { self.fd = fd; self.path = path }

    static func open(_ path: String, exclusive: Bool, as protectionClass: ProtectionClass) throws -> ProtectedFile {
        // No O_TRUNC: an existing file is emptied only once it has the class (empty()).
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : 0)
        let directory = (path as NSString).deletingLastPathComponent
        let fd = creating(in: directory, as: protectionClass) { Glibc.open(path, flags, 0o666) }
        guard fd >= 0 else { throw FileErrors.cocoa(errno, path: path, writing: true) }
        return ProtectedFile(fd: fd, path: path)
    }

    /// A new file in the target's directory, renamed over the target when complete.
    static func temporary(beside path: String, as protectionClass: ProtectionClass) throws -> ProtectedFile {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        for _ in 0..<16 {
            let candidate = "\(directory)/.\(name).dpfs-\(UInt32.random(in: 0...UInt32.max))"
            let fd = creating(in: directory, as: protectionClass) {
                Glibc.open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            }
            if fd >= 0 { return ProtectedFile(fd: fd, path: candidate) }
            if errno != EEXIST { throw FileErrors.cocoa(errno, path: path, writing: true) }
        }
        throw FileErrors.cocoa(EEXIST, path: path, writing: true)
    }

    /// Runs `create` (an open that may make a file in `directory`, -1 and errno on
    /// failure) with `protectionClass` given at creation: the mount gives the calling
    /// thread's next file there that class, as iOS's open_dprotected_np does. Where the
    /// mount does not take it, the file is made in the directory's class, as before.
    private static func creating(in directory: String, as protectionClass: ProtectionClass,
                                 _ create: () -> Int32) -> Int32 {
        let place = directory.isEmpty ? "." : directory
        let given = protectionClass.name.withCString {
            setxattr(place, MountAttributes.createProtection, $0, strlen($0), 0)
        } == 0
        let fd = create()
        let error = errno
        if given { removexattr(place, MountAttributes.createProtection) }
        errno = error
        return fd
    }

    /// Gives the file `protectionClass` unless it has it already: a new file mostly does
    /// (given at creation), and an existing one of the same class is left alone. On a
    /// file not yet emptied a move to a weaker class rewraps its key; a stronger one
    /// reseals the old content, the price of refusing before anything is lost.
    func takeClass(_ protectionClass: ProtectionClass) throws {
        if currentClass == protectionClass { return }
        let rc = protectionClass.name.withCString { fsetxattr(fd, MountAttributes.protection, $0, strlen($0), 0) }
        guard rc == 0 else { throw FileErrors.cocoa(errno, path: path, writing: true) }
    }

    /// The file's class, or nil when the mount does not say.
    private var currentClass: ProtectionClass? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = fgetxattr(fd, MountAttributes.protection, &buffer, buffer.count)
        guard n > 0 else { return nil }
        return ProtectionClass(name: String(decoding: buffer[0..<n], as: UTF8.self))
    }

    /// Gives an existing file `protectionClass` and empties it, in the order that loses
    /// nothing to a refusal and leaves nothing under a weaker class: a stronger class is
    /// taken first (refused, the old content stays as it was); a weaker one once the
    /// content is gone, so that a kill between the two never leaves the old content
    /// readable under the weaker class (emptying needs the current key, as the move does).
    func takeClassEmptied(_ protectionClass: ProtectionClass) throws {
        if let current = currentClass, protectionClass.strength < current.strength {
            try empty()
            try takeClass(protectionClass)
        } else {
            try takeClass(protectionClass)
            try empty()
        }
    }

    /// Drops the old content of an existing file.
    private func empty() throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileErrors.cocoa(errno, path: path, writing: true) }
        if info.st_size == 0 { return }
        guard ftruncate(fd, 0) == 0 else { throw FileErrors.cocoa(errno, path: path, writing: true) }
    }

    func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, base + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw FileErrors.cocoa(n < 0 ? errno : EIO, path: path, writing: true) }
            done += n
        }
    }

    func close() throws {
        isOpen = false
        guard Glibc.close(fd) == 0 else { throw FileErrors.cocoa(errno, path: path, writing: true) }
    }

    func abandon(unlinking: Bool) {
        if isOpen { isOpen = false; Glibc.close(fd) }
        if unlinking { unlink(path) }
    }
}
