// One conversation with a TPM through tpm2-tss's ESAPI: load the TCTI named by a
// string ("device:/dev/tpmrm0", "swtpm:host=127.0.0.1,port=2321"), run commands,
// close. Every dpfs operation opens its own; nothing is kept between them.
import CTss
import Glibc

final class TPMContext {
    let tcti: String
    private var tctiContext: OpaquePointer?
    private(set) var esys: OpaquePointer?

    /// The TCTI libraries print their own diagnostics; the error we throw says it once.
    /// Set once, at the first TPM use (a boot, before the daemon's servers start),
    /// and never over a TSS2_LOG the user chose.
    private static let quietLibraryLogs: Void = { setenv("TSS2_LOG", "all+none", 0) }()

    init(tcti: String) throws {
        self.tcti = tcti
        Self.quietLibraryLogs
        var tctiContext: OpaquePointer?
        var rc = Tss2_TctiLdr_Initialize(tcti, &tctiContext)
        guard rc == 0, let tctiContext else {
            throw TPMError.unreachable(tcti: tcti, reason: "its TCTI cannot be loaded or connected (0x\(String(rc, radix: 16)))")
        }
        self.tctiContext = tctiContext
        var esys: OpaquePointer?
        rc = Esys_Initialize(&esys, tctiContext, nil)
        guard rc == 0, let esys else {
            Tss2_TctiLdr_Finalize(&self.tctiContext)
            throw TPMError.unreachable(tcti: tcti, reason: "it does not answer (0x\(String(rc, radix: 16)))")
        }
        self.esys = esys
    }

    deinit {
        if esys != nil { Esys_Finalize(&esys) }
        if tctiContext != nil { Tss2_TctiLdr_Finalize(&tctiContext) }
    }

    /// Throws for a failed command, telling a wrong authorization and a lockout apart.
    func check(_ rc: TSS2_RC, _ command: String) throws {
        guard rc != 0 else { return }
        if TPMError.isFromTPM(rc) {
            switch TPMError.base(rc) {
            case TPMError.rcAuthFail, TPMError.rcBadAuth: throw TPMError.authorizationFailed
            case TPMError.rcLockout: throw TPMError.lockout(lockoutState())
            case TPMError.rcIntegrity where command == "Load": throw TPMError.sealedByAnotherTPM
            default: break
            }
        }
        throw TPMError.failed(command: command, code: UInt32(rc))
    }

    // MARK: Dictionary-attack state

    /// The TPM's lockout counts; a count it does not give is taken as the lockout's
    /// least (a counter at the limit, a recovery time of 0 s, which promises no end).
    func lockoutState() -> TPMLockout {
        let maxTries = (try? property(Self.ptMaxAuthFail)) ?? 0
        return TPMLockout(counter: (try? property(Self.ptLockoutCounter)) ?? maxTries, maxTries: maxTries,
                          recoveryTime: (try? property(Self.ptLockoutInterval)) ?? 0)
    }

    static let ptLockoutCounter: UInt32 = 0x200 + 14
    static let ptMaxAuthFail: UInt32 = 0x200 + 15
    static let ptLockoutInterval: UInt32 = 0x200 + 16

    /// A TPM2_PT_VAR property (TPM2_CAP_TPM_PROPERTIES).
    func property(_ property: UInt32) throws -> Int {
        var more: TPMI_YES_NO = 0
        var data: UnsafeMutablePointer<TPMS_CAPABILITY_DATA>?
        try check(Esys_GetCapability(esys, UInt32(ESYS_TR_NONE), UInt32(ESYS_TR_NONE), UInt32(ESYS_TR_NONE),
                                     0x0000_0006, property, 1, &more, &data), "GetCapability")
        defer { Esys_Free(data) }
        guard let data, data.pointee.data.tpmProperties.count >= 1,
              data.pointee.data.tpmProperties.tpmProperty.0.property == property else {
            throw TPMError.failed(command: "GetCapability", code: 0)
        }
        return Int(data.pointee.data.tpmProperties.tpmProperty.0.value)
    }

    /// Sets the dictionary-attack parameters (needs the lockout hierarchy's empty auth,
    /// as on a software TPM a test starts).
    func setDictionaryAttackParameters(maxTries: UInt32, recoveryTime: UInt32, lockoutRecovery: UInt32) throws {
        try check(Esys_DictionaryAttackParameters(esys, UInt32(ESYS_TR_RH_LOCKOUT), UInt32(ESYS_TR_PASSWORD),
                                                  UInt32(ESYS_TR_NONE), UInt32(ESYS_TR_NONE),
                                                  maxTries, recoveryTime, lockoutRecovery),
                  "DictionaryAttackParameters")
    }

    // MARK: Objects

    /// The storage primary key of the owner hierarchy from a fixed template (ECC
    /// P-256, AES-128-CFB): the same TPM always derives the same key, so nothing of it
    /// is stored. The caller flushes it.
    func createPrimary() throws -> ESYS_TR {
        var template = TPM2B_PUBLIC()
        template.publicArea.type = 0x0023  // TPM2_ALG_ECC
        template.publicArea.nameAlg = 0x000B  // SHA-256
        // fixedTPM, fixedParent, sensitiveDataOrigin, userWithAuth, noDA, restricted, decrypt
        template.publicArea.objectAttributes = 0x0000_0002 | 0x0000_0010 | 0x0000_0020 | 0x0000_0040
            | 0x0000_0400 | 0x0001_0000 | 0x0002_0000
        template.publicArea.parameters.eccDetail.symmetric.algorithm = 0x0006  // AES
        template.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128
        template.publicArea.parameters.eccDetail.symmetric.mode.aes = 0x0043  // CFB
        template.publicArea.parameters.eccDetail.scheme.scheme = 0x0010  // TPM2_ALG_NULL
        template.publicArea.parameters.eccDetail.curveID = 0x0003  // NIST P-256
        template.publicArea.parameters.eccDetail.kdf.scheme = 0x0010
        template.publicArea.unique.ecc.x.size = 0
        template.publicArea.unique.ecc.y.size = 0
        var sensitive = TPM2B_SENSITIVE_CREATE()
        var outsideInfo = TPM2B_DATA()
        var pcrs = TPML_PCR_SELECTION()
        var handle: ESYS_TR = UInt32(ESYS_TR_NONE)
        try check(Esys_CreatePrimary(esys, UInt32(ESYS_TR_RH_OWNER), UInt32(ESYS_TR_PASSWORD), UInt32(ESYS_TR_NONE),
                                     UInt32(ESYS_TR_NONE), &sensitive, &template, &outsideInfo, &pcrs,
                                     &handle, nil, nil, nil, nil), "CreatePrimary")
        return handle
    }

    func flush(_ handle: ESYS_TR) { _ = Esys_FlushContext(esys, handle) }
}
