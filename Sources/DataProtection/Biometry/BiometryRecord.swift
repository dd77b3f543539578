// The simulated user's enrollment, kept in the device directory (biometry.json,
// dpfs(5)) so that it survives a remount: whether biometry is enrolled and of which
// type, the enrollment's domain state (a random value that every enrollment replaces,
// which .biometryCurrentSet items are bound to) and the failed matches since the last
// success. Written whole and atomically at each change, its digest recorded first in
// the device's record in the secret store, which an older copy cannot bring back.
import DPFSProtocol
import Foundation

struct BiometryRecord: Codable, Equatable, Sendable {
    static let fileName = "biometry.json"
    static let currentVersion = 1

    var version = currentVersion
    var enrolled = false
    var type: BiometryType = .faceID
    /// Hex of 32 random bytes; nil when nothing is enrolled.
    var domainState: String?
    var failedMatches = 0

    static func path(in directory: DeviceDirectory) -> String { directory.root + "/" + fileName }

    /// How the file read at mount compared with what the device's record vouches for.
    enum Standing: Equatable, Sendable {
        case sound
        /// Unparsable or inconsistent.
        case damaged
        /// Not the file last written: an older copy put back, or edited.
        case notRecorded
    }

    /// The record of a device, checked against `recordedDigest` (the device record's,
    /// nil when none was recorded yet). A device that never enrolled has none (not
    /// enrolled, Face ID hardware). A damaged file, or one that is not the file last
    /// written, reads as nothing enrolled: every .biometryCurrentSet item fails closed,
    /// and the next enrollment rewrites it.
    static func load(from directory: DeviceDirectory, recordedDigest: String?) -> (BiometryRecord, Standing) {
        let path = path(in: directory)
        guard FileManager.default.fileExists(atPath: path) else {
            return (BiometryRecord(), recordedDigest == nil ? .sound : .notRecorded)
        }
        guard let bytes = try? AtomicFile.read(path),
              let record = try? JSONDecoder().decode(BiometryRecord.self, from: Data(bytes)),
              record.version == currentVersion,
              record.enrolled == (record.domainState != nil),
              record.failedMatches >= 0 else { return (BiometryRecord(), .damaged) }
        if let recordedDigest, digest(of: bytes) != recordedDigest { return (BiometryRecord(), .notRecorded) }
        return (record, .sound)
    }

    /// The file's bytes (JSON, sorted keys).
    func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(self))
    }

    func save(_ bytes: [UInt8], in directory: DeviceDirectory) throws {
        try AtomicFile.write(bytes, to: Self.path(in: directory))
    }

    /// BLAKE2b-128 of the file's bytes, in hex, as the device record keeps it.
    static func digest(of bytes: [UInt8]) -> String {
        var hash = StreamingHash(outputLength: 16)
        hash.update(bytes)
        return Hex.encode(hash.finish())
    }

    static func newDomainState() -> String {
        Sodium.randomBytes(32).map { String(format: "%02x", $0) }.joined()
    }
}
