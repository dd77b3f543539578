// A file's protection class with Foundation's own FileProtectionType values, through the
// mount's `user.dpfs.protection` attribute — what Foundation on Linux ignores in
// `FileAttributeKey.protectionKey` and `URLResourceValues.fileProtection`.
import CLinux
import DPFSProtocol
import Foundation
import Glibc

extension URL {
    /// Sets the class of a file (a weaker class rewraps its key; a stronger one gives it
    /// a new key and reseals its content) or of a directory (the class its new children
    /// take). Throws CocoaError with EPERM inside
    /// when the file's current key or the new class is not available now.
    public func setFileProtection(_ protection: FileProtectionType) throws {
        let path = try sandboxPath(writing: true)
        guard let name = protection.dpfsClass?.name else {
            throw FileErrors.cocoa(EINVAL, path: path, writing: true)
        }
        let rc = name.withCString { setxattr(path, MountAttributes.protection, $0, strlen($0), 0) }
        guard rc == 0 else { throw FileErrors.cocoa(errno, path: path, writing: true) }
    }

    /// The class of the file or directory; throws CocoaError (.featureUnsupported, ENOTSUP
    /// inside) for a path outside a dpfs mount.
    public func readFileProtection() throws -> FileProtectionType {
        let path = try sandboxPath(writing: false)
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = getxattr(path, MountAttributes.protection, &buffer, buffer.count)
        guard n >= 0 else {
            let code = errno == ENODATA ? ENOTSUP : errno
            throw FileErrors.cocoa(code, path: path, writing: false)
        }
        guard let protectionClass = ProtectionClass(name: String(decoding: buffer[0..<n], as: UTF8.self)) else {
            throw FileErrors.cocoa(EINVAL, path: path, writing: false)
        }
        return FileProtectionType(protectionClass)
    }

    /// The class of the file, or nil when it cannot be read (no such file, not in a
    /// dpfs mount) — as Apple's `resourceValues(forKeys: [.fileProtectionKey])` gives nil.
    public var fileProtection: FileProtectionType? {
        try? readFileProtection()
    }

    /// The path, if it names something inside a mounted dpfs sandbox: setting the
    /// attribute on an ordinary filesystem would store it and mean nothing. Outside one
    /// the error is ENOTSUP, or ENOENT when there is nothing there: no file, or, for
    /// one to be `creating`, no directory to make it in.
    func sandboxPath(writing: Bool, creating: Bool = false) throws -> String {
        guard isFileURL else { throw FileErrors.cocoa(EINVAL, path: absoluteString, writing: writing) }
        let path = self.path
        guard SandboxCheck.isInSandbox(path) else {
            let there = creating ? (path as NSString).deletingLastPathComponent : path
            let code = SandboxCheck.exists(there) ? ENOTSUP : ENOENT
            throw FileErrors.cocoa(code, path: path, writing: writing)
        }
        return path
    }
}

enum SandboxCheck {
    /// Whether the mount holding `path` (or, for a new file, its directory) is a dpfs
    /// sandbox: the root of its filesystem answers dpfs's control attribute.
    static func isInSandbox(_ path: String) -> Bool {
        var current = (path as NSString).standardizingPath
        var info = stat()
        if lstat(current, &info) != 0 {
            current = (current as NSString).deletingLastPathComponent
            guard stat(current, &info) == 0 else { return false }
        }
        let device = info.st_dev
        while current != "/" {
            let parent = (current as NSString).deletingLastPathComponent
            guard stat(parent, &info) == 0, info.st_dev == device else { break }
            current = parent
        }
        return ControlClient.isMounted(current)
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}
