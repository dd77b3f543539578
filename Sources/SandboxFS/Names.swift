// Where a name the kernel sends meets the backing tree: a plaintext name in a
// directory maps to its sealed backing name (NameCipher: deterministic per directory,
// so a lookup is one seal and one *at() call, no scan), and readdir maps back. A name
// whose sealed form passes 255 bytes is stored under a stand-in, with its sealed form
// in a side file "<stand-in>.name" beside it, written before the entry is made and
// removed after it is gone (a crash leaves at most an unused side file).
//
// Reserved: the reapers' directory (NodeReaper.swift) sits at the sandbox root under a
// name beginning with ".fuse_hidden". Sealed names are base64url, which never holds a
// dot, so they never meet it nor a side file's name.
import BlockStore
import DataProtection
import Glibc
import SystemCalls

/// A plaintext name's form in the backing tree.
struct BackingName: Sendable {
    /// What the directory entry is called.
    let stored: [CChar]
    /// For a long name: the side file's name and contents.
    let sideFile: (name: [CChar], contents: String)?
    /// The name in its directory, as its node's name tags know it (NameBindings.swift);
    /// nil for a name too long to exist.
    var place: NamePlace? = nil
}

/// A plaintext name and its backing form under a directory ID: the form follows from
/// those two alone, so it can be kept for the next request. (A directory whose record
/// is repaired gets a new ID, and its kept name no longer matches.)
final class SealedName: Sendable {
    let directoryID: [UInt8]
    let plain: [UInt8]
    let backing: BackingName
    init(directoryID: [UInt8], plain: [UInt8], backing: BackingName) {
        self.directoryID = directoryID
        self.plain = plain
        self.backing = backing
    }

    func isForm(of name: UnsafePointer<CChar>, length: Int, under id: [UInt8]) -> Bool {
        directoryID == id && plain.count == length && plain.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return length == 0 }
            return memcmp(base, name, length) == 0
        }
    }
}

extension SandboxFileSystem {
    static let reservedNamePrefix = ".fuse_hidden"

    /// Whether a backing name is reserved (never listed, found, made or renamed to).
    @inline(__always)
    static func isReserved(_ name: UnsafePointer<CChar>) -> Bool {
        name.pointee == 0x2e && strncmp(name, reservedNamePrefix, 12) == 0
    }

    /// The backing form of plaintext `name` in `directory`; fails as `directoryID` does.
    func backingName(_ name: UnsafePointer<CChar>, in directory: Inode) throws(Errno) -> BackingName {
        let length = strlen(name)
        // Over NAME_MAX: the raw name itself, which the backing filesystem refuses
        // (ENAMETOOLONG), as it would a name that long.
        if length > Int(NAME_MAX) {
            return BackingName(stored: Array(UnsafeBufferPointer(start: name, count: length + 1)), sideFile: nil)
        }
        let id = try directoryID(directory)
        if let last = directory.lastSealedName.withLock({ $0 }), last.isForm(of: name, length: length, under: id) {
            return last.backing
        }
        let plain = Array(UnsafeRawBufferPointer(start: name, count: length))
        let sealed = plain.withUnsafeBytes { device.nameCipher.sealedCString($0, directoryID: id) }
        let backing: BackingName
        if let encoded = sealed.longEncoded {
            let sideFile = Array(sealed.stored.dropLast()) + Array(LongName.sideFileSuffix.utf8CString)
            backing = BackingName(stored: sealed.stored, sideFile: (sideFile, encoded), place: sealed.place)
        } else {
            backing = BackingName(stored: sealed.stored, sideFile: nil, place: sealed.place)
        }
        let kept = SealedName(directoryID: id, plain: plain, backing: backing)
        directory.lastSealedName.withLock { $0 = kept }
        return backing
    }

    /// A listed name as plaintextName reads it.
    enum ListedName {
        case shown(name: [CChar], place: NamePlace?)
        /// Not shown, for good: reserved, a side file, damaged or not this directory's.
        case hidden
        /// Not readable now (descriptors or memory short): a listing must not go on
        /// without it, as the kernel keeps listings (Directories.swift).
        case unreadable(Errno)
    }

    /// The plaintext name of backing entry `backing` in `directory` (whose listing
    /// descriptor is `directoryFD`), with its place: "." and ".." pass as they are (no
    /// place); reserved names, side files and names that do not open are hidden.
    func plaintextName(_ backing: UnsafePointer<CChar>, in directory: Inode, directoryFD: Int32) -> ListedName {
        if Self.isDotOrDotDot(backing) { return .shown(name: Array(UnsafeBufferPointer(start: backing, count: strlen(backing) + 1)), place: nil) }
        if Self.isReserved(backing) { return .hidden }
        let stored = String(cString: backing)
        if LongName.isSideFile(stored) { return .hidden }
        let id: [UInt8]
        do throws(Errno) { id = try directoryID(directory) } catch {
            return Self.isShortage(error) ? .unreadable(error) : .hidden
        }
        var encoded = stored
        if LongName.isStandIn(stored) {
            let contents: String
            do throws(Errno) { contents = try readSideFile(directoryFD, stored + LongName.sideFileSuffix) } catch {
                return Self.isShortage(error) ? .unreadable(error) : .hidden
            }
            guard LongName.matches(stored, encoded: contents) else { return .hidden }
            encoded = contents
        }
        guard let (plain, place) = device.nameCipher.openPlaced(encoded, directoryID: id), !plain.contains(0),
              !plain.contains(UInt8(ascii: "/")) else { return .hidden }
        return .shown(name: plain.map { CChar(bitPattern: $0) } + [0], place: place)
    }

    /// Errors that say nothing about the file, only that the process is short of
    /// something for now.
    static func isShortage(_ error: Errno) -> Bool {
        error.rawValue == EMFILE || error.rawValue == ENFILE || error.rawValue == ENOMEM
    }

    /// A directory's ID, from its class record (or recovered from a damaged one,
    /// DirectoryIDRecovery), cached on the entry: EIO when the ID is lost or the
    /// directory was reached by a name that is not its own (NameBindings.swift); EMFILE,
    /// ENFILE or ENOMEM when the process was short of them to read either.
    func directoryID(_ directory: Inode) throws(Errno) -> [UInt8] {
        let id: [UInt8]
        if let known = directory.directoryID.withLock({ $0 }) {
            id = known
        } else {
            do throws(Errno) { id = try directoryRecord(directory).directoryID } catch {
                if Self.isShortage(error) { throw error }
                // A damaged record whose ID is proven still names the entries.
                let fd: Int32
                do throws(Errno) {
                    fd = try directory.systemCall { openat($0, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
                } catch {
                    throw Self.isShortage(error) ? error : .io
                }
                defer { close(fd) }
                guard let recovered = recoveredDirectoryID(directory, fd: fd) else { throw Errno.io }
                id = recovered
            }
            directory.directoryID.withLock { $0 = id }
        }
        try checkOwnNames(directory, identity: id)
        return id
    }

    /// Writes a long name's side file (before its entry is made).
    func writeSideFile(_ parentFD: Int32, _ name: BackingName) throws(Errno) {
        guard let side = name.sideFile else { return }
        let fd = try makingNode { openat(parentFD, side.name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        defer { close(fd) }
        let bytes = Array(side.contents.utf8)
        try bytes.withBytes { (buffer) throws(Errno) in try pwriteAll(fd, buffer, at: 0) }
        try Errno.check(fdatasync(fd))
    }

    /// Removes a long name's side file once its entry is gone.
    func removeSideFile(_ parentFD: Int32, _ name: BackingName) {
        if let side = name.sideFile { _ = unlinkat(parentFD, side.name, 0) }
    }

    /// A long name's side file; its error, EIO if it is empty.
    func readSideFile(_ directoryFD: Int32, _ name: String) throws(Errno) -> String {
        let fd = try Errno.check(openat(directoryFD, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW))
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = try buffer.withMutableBytes { (bytes) throws(Errno) in try preadAll(fd, bytes, at: 0) }
        guard n > 0 else { throw Errno.io }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }

    // MARK: Symlink targets

    /// The stored form of a symlink target: sealed, or a long target's stand-in whose
    /// file is written now (LongTargetFiles).
    func backingTarget(_ target: UnsafePointer<CChar>) throws(Errno) -> String {
        let plain = Array(UnsafeRawBufferPointer(start: target, count: strlen(target)))
        guard plain.count < Int(PATH_MAX) else { throw Errno(ENAMETOOLONG) }
        return try LongTargetFiles.store(plain, cipher: device.nameCipher, sandbox: rootFD)
    }

    /// A stored symlink target's plaintext (NUL-terminated); nil when forged or damaged.
    func plaintextTarget(_ stored: [CChar]) -> [CChar]? {
        let text = String(decoding: stored.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let plain = LongTargetFiles.open(text, cipher: device.nameCipher, sandbox: rootFD) else { return nil }
        return plain.map { CChar(bitPattern: $0) } + [0]
    }
}
