// dpfs tpm-lockout (hidden): a TPM's dictionary-attack state, read with ESAPI, and for
// a software TPM in a test, new parameters. Not part of the stable command line.
import ArgumentParser
import DataProtection

struct TPMLockoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tpm-lockout",
        abstract: "Show (or set) a TPM's dictionary-attack lockout state.",
        shouldDisplay: false)

    @Argument(help: "The TCTI, e.g. device:/dev/tpmrm0 or swtpm:host=127.0.0.1,port=2321.") var tcti: String
    @Option(help: ArgumentHelp("Set maxTries,recoveryTime,lockoutRecovery (needs an empty lockout auth).",
                               valueName: "n,s,s")) var set: String?

    func run() throws {
        do {
            if let set {
                let numbers = set.split(separator: ",").compactMap { Int($0) }
                guard numbers.count == 3, numbers.allSatisfy({ $0 >= 0 }) else {
                    throw CLIError("--set needs three numbers: maxTries,recoveryTime,lockoutRecovery")
                }
                try TPMSecretStore.setLockoutParameters(tcti: tcti, maxTries: numbers[0], recoveryTime: numbers[1],
                                                        lockoutRecovery: numbers[2])
            }
            let state = try TPMSecretStore.lockoutState(tcti: tcti)
            print("counter \(state.counter) maxTries \(state.maxTries) recoveryTime \(state.recoveryTime)")
        } catch let error as TPMError {
            throw CLIError(error)
        }
    }
}
