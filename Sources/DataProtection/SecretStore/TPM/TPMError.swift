// What can go wrong talking to a TPM, in words a user can act on. The response codes
// that matter for a passcode are told apart: a wrong authorization (counted by the
// TPM's dictionary-attack protection) and the lockout it leads to.
import CTss
import Foundation

public enum TPMError: Error, CustomStringConvertible, Equatable {
    /// The TCTI could not be loaded or the TPM did not answer.
    case unreachable(tcti: String, reason: String)
    /// TPM_RC_AUTH_FAIL: a wrong authValue, counted against the lockout.
    case authorizationFailed
    /// TPM_RC_LOCKOUT: dictionary-attack lockout, with the TPM's counts where it told them.
    case lockout(TPMLockout)
    /// TPM_RC_INTEGRITY from Load: the sealed object is not one this TPM's storage key
    /// made — another TPM sealed it, or this one was cleared since.
    case sealedByAnotherTPM
    /// Any other failure of `command`.
    case failed(command: String, code: UInt32)

    public var description: String {
        switch self {
        case .unreachable(let tcti, let reason): return "the TPM at \(tcti) cannot be reached: \(reason)"
        case .authorizationFailed: return "the TPM refused the authorization"
        case .lockout(let lockout): return lockout.description
        case .sealedByAnotherTPM:
            return "this TPM cannot open the device's sealed secret: another TPM sealed it, or this TPM was "
                + "cleared since (its storage key changed); the device cannot be opened here, and only a backup "
                + "restores what it held (dpfs restore into a new directory)"
        case .failed(let command, let code):
            return "the TPM refused \(command) (response code 0x\(String(code, radix: 16)))"
        }
    }

    static let rcFormat1: UInt32 = 0x080
    static let rcAuthFail: UInt32 = 0x08E
    static let rcBadAuth: UInt32 = 0x0A2
    static let rcLockout: UInt32 = 0x921
    static let rcIntegrity: UInt32 = 0x09F

    /// The TPM's own response code without the layer and the handle/session/parameter
    /// number a format-1 code carries.
    static func base(_ rc: TSS2_RC) -> UInt32 {
        let code = UInt32(rc) & 0xFFF
        return code & rcFormat1 != 0 ? code & 0x0BF : code
    }

    /// Whether `rc` came from the TPM itself (layer 0), not from the software stack.
    static func isFromTPM(_ rc: TSS2_RC) -> Bool { UInt32(rc) & 0xFFFF_0000 == 0 }
}
