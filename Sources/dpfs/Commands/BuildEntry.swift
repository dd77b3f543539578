// The secret-store entry that init or restore makes for the device it builds
// (BuildDirectory), found again when the build is abandoned: a command killed part-way
// leaves the entry, and nobody but the build knows its UUID, so the next init or
// restore that removes the build forgets the entry too. Once the keybag is saved it
// names the entry; until then a note in the build does, written before the entry is
// made and removed once the keybag is saved.
import DataProtection
import Foundation
import Glibc

enum BuildEntry {
    static let noteName = "secret-store-entry.json"

    private struct Note: Codable {
        var deviceUUID: String
        var secretStore: String
    }

    /// Notes in `build`, durably, the entry about to be made for `deviceUUID` in `store`.
    static func note(_ deviceUUID: String, in store: SecretStoreLocation, at build: DeviceDirectory) throws {
        let path = build.root + "/" + noteName
        let bytes = try [UInt8](JSONEncoder().encode(Note(deviceUUID: deviceUUID, secretStore: store.description)))
        // Synced before the entry is made, so a note cut short (a power cut) is one
        // whose entry was never made.
        try createSynced(bytes, at: path)
    }

    /// Creates the build's file `path` in place with `bytes`, then syncs it and its
    /// directory: not renamed into place, as a file of the build is only believed
    /// while the build is abandoned, and one cut short names what never happened.
    static func createSynced(_ bytes: [UInt8], at path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError("create", path) }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(fd) == 0 else { throw SystemError("write", path) }
        try AtomicFile.syncDirectory(of: path)
    }

    /// Removes the note once the keybag, which names the same entry, is saved: what
    /// becomes the device holds nothing of its making.
    static func removeNote(from build: DeviceDirectory) throws {
        let path = build.root + "/" + noteName
        guard unlink(path) == 0 || errno == ENOENT else { throw SystemError("unlink", path) }
        try AtomicFile.syncDirectory(of: path)
    }

    /// Forgets the entry of the abandoned build open as `build` (at `path`), as
    /// `forget` would: what its keybag names, else its note; nothing when the command
    /// died before making one. Never the entry of the device at `target`. The paths of
    /// what it removed.
    static func forgetAbandoned(_ build: Int32, at path: String, sparing target: DeviceDirectory) -> [String] {
        guard isOwnBuild(build), let abandoned = entry(of: build, at: path), UUIDText.isValid(abandoned.deviceUUID) else {
            return []
        }
        if target.isInitialised, let live = try? KeybagFile.storeEntry(of: target), live.deviceUUID == abandoned.deviceUUID {
            return []
        }
        let entries = DeviceProvisioning.entries(of: abandoned.deviceUUID, in: abandoned.store)
        guard !entries.isEmpty else { return [] }
        DeviceProvisioning.discard(abandoned.deviceUUID, in: abandoned.store)
        return entries
    }

    /// Whether the build open as `build` is a directory of this user's that nobody else
    /// can write into: what it names was noted by a command of ours, not planted to have
    /// another device's entry forgotten or another's files removed.
    static func isOwnBuild(_ build: Int32) -> Bool {
        var info = stat()
        return fstat(build, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && info.st_uid == geteuid()
            && info.st_mode & 0o022 == 0
    }

    /// The entry the build names: its keybag's, else its note's.
    private static func entry(of build: Int32, at path: String) -> (deviceUUID: String, store: SecretStoreLocation)? {
        let directory = DeviceDirectory(path)
        let keybag = (directory.keybagPath as NSString).lastPathComponent
        if let bytes = read(keybag, in: build), let entry = try? KeybagFile.storeEntry(decoding: bytes, of: directory) {
            return entry
        }
        guard let bytes = read(noteName, in: build), let note = try? JSONDecoder().decode(Note.self, from: Data(bytes)),
              let store = try? SecretStoreLocation(parsing: note.secretStore) else { return nil }
        return (note.deviceUUID, store)
    }

    /// The file `name` of the directory open as `directory`, read through that
    /// descriptor (its path could be made to lead elsewhere): a regular file of this
    /// user's only, never a link.
    static func read(_ name: String, in directory: Int32) -> [UInt8]? {
        let fd = openat(directory, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        let file = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(),
              let data = try? file.readToEnd() else { return nil }
        return [UInt8](data)
    }
}
