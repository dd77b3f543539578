// Brings a device of format 3 up to format 4: gives every regular file and directory
// the tag of each name it has (NameBinding), walking the backing tree with the
// metadata and name keys (no passcode needed). The first mount runs it before it
// serves a request and records the new format only after it (a crash repeats it; a
// repeat adds nothing twice). It trusts the tree as it finds it, as format 3 did:
// nodes already damaged (a name, record or header that does not verify) are left as
// they are, and read as EIO as before.
import CLinux
import DataProtection
import Foundation
import Glibc

public struct NameTagUpgrade {
    let device: LockStateManager

    public init(device: LockStateManager) { self.device = device }

    /// Tags the tree; how many nodes it tagged.
    public func run() -> Int {
        var tagged = 0
        guard let rootID = directoryID(device.directory.sandboxPath) else { return 0 }
        walk(device.directory.sandboxPath, id: rootID, tagged: &tagged)
        return tagged
    }

    private func walk(_ path: String, id: [UInt8], tagged: inout Int) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        for stored in entries {
            if stored.hasPrefix(".fuse_hidden") || LongName.isSideFile(stored) { continue }
            let child = path + "/" + stored
            var encoded = stored
            if LongName.isStandIn(stored) {
                guard let contents = try? String(contentsOfFile: child + LongName.sideFileSuffix, encoding: .utf8),
                      LongName.matches(stored, encoded: contents) else { continue }
                encoded = contents
            }
            guard let (_, place) = device.nameCipher.openPlaced(encoded, directoryID: id) else { continue }
            var st = stat()
            guard lstat(child, &st) == 0 else { continue }
            switch st.st_mode & S_IFMT {
            case S_IFDIR:
                guard let childID = directoryID(child) else { continue }
                if tag(child, identity: childID, place: place) { tagged += 1 }
                walk(child, id: childID, tagged: &tagged)
            case S_IFREG:
                guard let fileID = fileID(child) else { continue }
                if tag(child, identity: fileID, place: place) { tagged += 1 }
            default:
                continue
            }
        }
    }

    private func tag(_ path: String, identity: [UInt8], place: NamePlace) -> Bool {
        guard let tags = try? NameTagStore.read(path),
              let updated = NameBinding.updated(tags, identity: identity, adding: place, removing: nil,
                                                metadataKey: device.metadataKey) else { return false }
        return (try? NameTagStore.write(path, updated)) != nil
    }

    private func directoryID(_ path: String) -> [UInt8]? {
        DirectoryClassRecord.read(at: path, metadataKey: device.metadataKey)?.directoryID
    }

    private func fileID(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return (try? HeaderIO.read(fd, metadataKey: device.metadataKey))?.fileID
    }
}

extension DirectoryClassRecord {
    /// The verified class record of the backing directory at `path`; nil when missing or forged.
    public static func read(at path: String, metadataKey: SecureBuffer) -> Decoded? {
        var buffer = [UInt8](repeating: 0, count: size + 1)
        let n = getxattr(path, MountAttributes.protection, &buffer, buffer.count)
        guard n > 0 else { return nil }
        return decode(buffer[0..<n], metadataKey: metadataKey)
    }
}
