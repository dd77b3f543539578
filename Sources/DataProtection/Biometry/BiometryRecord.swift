// The simulated user's enrollment, kept in the device directory (biometry.json,
// dpfs(5)) so that it survives a remount: whether biometry is enrolled and of which
// type, the enrollment's domain state (a random value that every enrollment replaces,
// which .biometryCurrentSet items are bound to) and the failed matches since the last
// success. Written whole and atomically at each change.
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

    /// The record of a device; a device that never enrolled has none (not enrolled,
    /// Face ID hardware). A damaged or unknown record reads as nothing enrolled: every
    /// .biometryCurrentSet item fails closed, and the next enrollment rewrites it.
    static func load(from directory: DeviceDirectory) -> (BiometryRecord, damaged: Bool) {
        let path = path(in: directory)
        guard FileManager.default.fileExists(atPath: path) else { return (BiometryRecord(), false) }
        guard let bytes = try? AtomicFile.read(path),
              let record = try? JSONDecoder().decode(BiometryRecord.self, from: Data(bytes)),
              record.version == currentVersion,
              record.enrolled == (record.domainState != nil),
              record.failedMatches >= 0 else { return (BiometryRecord(), true) }
        return (record, false)
    }

    func save(in directory: DeviceDirectory) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try AtomicFile.write(Array(try encoder.encode(self)), to: Self.path(in: directory))
    }

    static func newDomainState() -> String {
        Sodium.randomBytes(32).map { String(format: "%02x", $0) }.joined()
    }
}
