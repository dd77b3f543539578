// The ID of a directory whose class record does not verify. The directory's names are
// sealed under its ID (NameCipher), and the ID is kept nowhere but in that record: a
// damaged record would lose every name below it. The record's ID bytes are usually
// intact (the damage hit its class or MAC) or one byte off, so they and each of their
// one-byte changes are tried, and one is taken only when the device's keys prove it:
// an entry's name opens under it, or the directory's own name tags list it at a place
// it is known by. Both are 128-bit keyed hashes, so a forged or guessed ID passes
// neither. The record's class is not proven this way and stays damage.
import CLinux
import DataProtection
import Glibc

public enum DirectoryIDRecovery {
    /// Entries whose names are tried against each candidate: a few suffice, and a
    /// directory of many damaged names costs no more.
    static let triedEntries = 4

    /// The proven ID of the backing directory at `path` (a /proc/self/fd path serves),
    /// whose record does not verify; `places` are the places its name in its parent is
    /// known by. Nil when no candidate is proven.
    public static func recover(at path: String, places: [NamePlace], names: NameCipher,
                               metadataKey: SecureBuffer) -> [UInt8]? {
        var record = [UInt8](repeating: 0, count: DirectoryClassRecord.size + 1)
        let n = getxattr(path, MountAttributes.protection, &record, record.count)
        guard n > DirectoryClassRecord.directoryIDSize else { return nil }
        let stored = Array(record[1...DirectoryClassRecord.directoryIDSize])
        let tags = places.isEmpty ? [] : ((try? NameTagStore.read(path)) ?? nil) ?? []
        let encodedNames = sampleNames(path)
        guard !encodedNames.isEmpty || !tags.isEmpty else { return nil }
        func proven(_ candidate: [UInt8]) -> Bool {
            encodedNames.contains { names.openPlaced($0, directoryID: candidate) != nil }
                || places.contains { NameBinding.lists(tags, identity: candidate, place: $0, metadataKey: metadataKey) }
        }
        if proven(stored) { return stored }
        var candidate = stored
        for index in candidate.indices {
            for value in UInt8.min...UInt8.max where value != stored[index] {
                candidate[index] = value
                if proven(candidate) { return candidate }
            }
            candidate[index] = stored[index]
        }
        return nil
    }

    /// The encoded names of the first few entries of the directory at `path` (a long
    /// name's from its side file).
    public static func sampleNames(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var found: [String] = []
        while found.count < triedEntries, let entry = readdir(directory) {
            let stored = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if stored == "." || stored == ".." || stored.hasPrefix(".fuse_hidden") || LongName.isSideFile(stored) { continue }
            if LongName.isStandIn(stored) {
                if let contents = sideFile(path + "/" + stored + LongName.sideFileSuffix),
                   LongName.matches(stored, encoded: contents) { found.append(contents) }
            } else {
                found.append(stored)
            }
        }
        return found
    }

    private static func sideFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = read(fd, &buffer, buffer.count)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }
}
