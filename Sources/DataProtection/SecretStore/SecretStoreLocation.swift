// Where a device's secret lives: never in the device directory, so that a
// copy of that directory allows no passcode guess. `init --secret-store` chooses; the
// keybag records the choice and the device's UUID, by which the store names the secret
// (a file) or its record (a file, or the TPM's NV index).
import Foundation
import Glibc

public enum SecretStoreLocation: Sendable, Equatable, CustomStringConvertible {
    /// A 0600 file `UUID.secret` in a 0700 directory of the device's owner.
    case file(directory: String)
    /// Sealed to a TPM 2.0 reached through a TCTI (TPMSecretStore).
    case tpm2(tcti: String)

    public static let defaultTCTI = "device:/dev/tpmrm0"

    public enum ParseError: Error, CustomStringConvertible {
        case unknown(String)
        case relative(String)

        public var description: String {
            switch self {
            case .unknown(let text): return "unknown secret store '\(text)'; use file, file:DIR or tpm2[:TCTI]"
            case .relative(let dir): return "secret store directory \(dir) must be an absolute path"
            }
        }
    }

    /// Parses `init --secret-store`; nil (the option not given) is the default file store.
    public init(parsing text: String?) throws(ParseError) {
        guard let text, text != "file" else {
            self = .file(directory: Self.defaultFileDirectory())
            return
        }
        if text.hasPrefix("file:") {
            let directory = String(text.dropFirst(5))
            guard directory.hasPrefix("/") else { throw .relative(directory) }
            self = .file(directory: AbsolutePath.of(directory))
            return
        }
        if text == "tpm2" {
            self = .tpm2(tcti: Self.defaultTCTI)
            return
        }
        if text.hasPrefix("tpm2:"), text.count > 5 {
            self = .tpm2(tcti: String(text.dropFirst(5)))
            return
        }
        throw .unknown(text)
    }

    /// The form the keybag records, and `init --secret-store` takes again.
    public var description: String {
        switch self {
        case .file(let directory): return "file:" + directory
        case .tpm2(let tcti): return "tpm2:" + tcti
        }
    }

    /// `/var/lib/dpfs` for root; else `$XDG_STATE_HOME/dpfs`, or `~/.local/state/dpfs`.
    /// Read at `init` only: a mount reads the location the keybag recorded, so no
    /// variable in a later environment can point the daemon at another secret.
    static func defaultFileDirectory() -> String {
        if geteuid() == 0 { return "/var/lib/dpfs" }
        let environment = ProcessInfo.processInfo.environment
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/dpfs" }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        return home + "/.local/state/dpfs"
    }
}
