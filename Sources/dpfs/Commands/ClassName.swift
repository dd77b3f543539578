// A protection class named on the command line. An unknown name is a usage error
// (status 64), as an unknown --accessible is: one line that names the valid classes.
import DPFSProtocol

extension ProtectionClass {
    static func named(onCommandLine name: String) throws -> ProtectionClass {
        guard let parsed = ProtectionClass(name: name) else {
            throw CLIError("unknown protection class '\(name)'; valid: \(validNames)", status: .usage)
        }
        return parsed
    }
}
