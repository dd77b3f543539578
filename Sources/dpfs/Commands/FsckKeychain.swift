// What dpfs fsck says of the keychain: SQLite's integrity check (damage the record's
// digest cannot see, such as an index), then the device's record (an older copy put
// back, a row edited or damaged). Read only: the file is never repaired or changed.
// A keychain that fails is one finding among the files', never a reason to stop:
// the sandbox's files do not depend on it, and a salvage must still copy them out.
import DataProtection
import ItemStore

struct KeychainFinding: CustomStringConvertible {
    let problem: String
    /// What fsck exits with for it: rollback refused for a keychain that is whole but
    /// not the one the record names, failure for damage.
    let status: ExitStatus

    var description: String {
        "keychain.sqlite: \(problem); left as it was (the sandbox's files do not depend on it)"
    }

    /// nil when the keychain is whole and the one the device's record names.
    static func of(_ directory: DeviceDirectory, device: LockStateManager) -> KeychainFinding? {
        let path = directory.itemStorePath
        if let damage = KeychainIntegrity.damage(at: path) {
            return KeychainFinding(problem: "damaged: SQLite's integrity check says "
                                       + damage.problems.joined(separator: "; "), status: .failure)
        }
        do { try ItemStore.checkGeneration(path: path, device: device) } catch {
            return KeychainFinding(problem: "\(error)", status: ExitStatus.of(error))
        }
        return nil
    }
}
