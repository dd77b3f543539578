// A sealed data object (keyedhash) under the TPM's primary key: the TPM keeps the data
// and gives it back only to the TPM that made it, and only for its authValue. Its
// public and private blobs are all that is stored; without that TPM they are useless.
import CTss
import Glibc

public struct TPMSealedBlobs: Codable, Sendable, Equatable {
    public var publicArea: Bytes
    public var privateArea: Bytes
}

enum TPMSealedObject {
    /// Seals `data` (at most 128 bytes). With `auth`, unsealing needs it, and a wrong
    /// one counts against the dictionary-attack lockout; without, the object is noDA
    /// and opens for anyone who holds this TPM.
    static func create(_ context: TPMContext, sealing data: SecureBuffer, auth: SecureBuffer?) throws -> TPMSealedBlobs {
        let primary = try context.createPrimary()
        defer { context.flush(primary) }
        var template = TPM2B_PUBLIC()
        template.publicArea.type = 0x0008  // TPM2_ALG_KEYEDHASH
        template.publicArea.nameAlg = 0x000B
        // fixedTPM, fixedParent, userWithAuth; noDA only for an object without a passcode.
        template.publicArea.objectAttributes = 0x0000_0002 | 0x0000_0010 | 0x0000_0040 | (auth == nil ? 0x0000_0400 : 0)
        template.publicArea.parameters.keyedHashDetail.scheme.scheme = 0x0010  // TPM2_ALG_NULL
        template.publicArea.unique.keyedHash.size = 0
        // The sensitive part (data and authValue) is built in locked memory.
        let sensitiveMemory = SecureBuffer(count: MemoryLayout<TPM2B_SENSITIVE_CREATE>.size)
        defer { sensitiveMemory.wipe() }
        let sensitive = UnsafeMutableRawPointer(sensitiveMemory.mutableBytes.start).bindMemory(to: TPM2B_SENSITIVE_CREATE.self, capacity: 1)
        guard data.count <= MemoryLayout.size(ofValue: sensitive.pointee.sensitive.data.buffer) else {
            throw TPMError.failed(command: "Create (the data is too long)", code: 0)
        }
        sensitive.pointee.sensitive.data.size = UInt16(data.count)
        withUnsafeMutableBytes(of: &sensitive.pointee.sensitive.data.buffer) { $0.copyMemory(from: data.bytes) }
        if let auth {
            sensitive.pointee.sensitive.userAuth.size = UInt16(auth.count)
            withUnsafeMutableBytes(of: &sensitive.pointee.sensitive.userAuth.buffer) { $0.copyMemory(from: auth.bytes) }
        }
        var outsideInfo = TPM2B_DATA()
        var pcrs = TPML_PCR_SELECTION()
        var privatePart: UnsafeMutablePointer<TPM2B_PRIVATE>?
        var publicPart: UnsafeMutablePointer<TPM2B_PUBLIC>?
        try context.check(Esys_Create(context.esys, primary, UInt32(ESYS_TR_PASSWORD), UInt32(ESYS_TR_NONE),
                                      UInt32(ESYS_TR_NONE), sensitive, &template, &outsideInfo, &pcrs,
                                      &privatePart, &publicPart, nil, nil, nil), "Create")
        defer { Esys_Free(privatePart); Esys_Free(publicPart) }
        guard let privatePart, let publicPart else { throw TPMError.failed(command: "Create", code: 0) }
        return TPMSealedBlobs(publicArea: Bytes(try marshal(publicPart, Tss2_MU_TPM2B_PUBLIC_Marshal)),
                              privateArea: Bytes(try marshal(privatePart, Tss2_MU_TPM2B_PRIVATE_Marshal)))
    }

    /// The sealed data, into locked memory. A wrong `auth` throws `authorizationFailed`
    /// (and the TPM counts it), a TPM in lockout `lockout`.
    static func unseal(_ context: TPMContext, _ blobs: TPMSealedBlobs, auth: SecureBuffer?) throws -> SecureBuffer {
        var publicPart = TPM2B_PUBLIC()
        var privatePart = TPM2B_PRIVATE()
        try unmarshal(blobs.publicArea.value, into: &publicPart, Tss2_MU_TPM2B_PUBLIC_Unmarshal)
        try unmarshal(blobs.privateArea.value, into: &privatePart, Tss2_MU_TPM2B_PRIVATE_Unmarshal)
        let primary = try context.createPrimary()
        defer { context.flush(primary) }
        var object: ESYS_TR = UInt32(ESYS_TR_NONE)
        try context.check(Esys_Load(context.esys, primary, UInt32(ESYS_TR_PASSWORD), UInt32(ESYS_TR_NONE),
                                    UInt32(ESYS_TR_NONE), &privatePart, &publicPart, &object), "Load")
        defer { context.flush(object) }
        if let auth {
            let authMemory = SecureBuffer(count: MemoryLayout<TPM2B_AUTH>.size)
            defer { authMemory.wipe() }
            let value = UnsafeMutableRawPointer(authMemory.mutableBytes.start).bindMemory(to: TPM2B_AUTH.self, capacity: 1)
            value.pointee.size = UInt16(auth.count)
            withUnsafeMutableBytes(of: &value.pointee.buffer) { $0.copyMemory(from: auth.bytes) }
            try context.check(Esys_TR_SetAuth(context.esys, object, value), "SetAuth")
        }
        var out: UnsafeMutablePointer<TPM2B_SENSITIVE_DATA>?
        try context.check(Esys_Unseal(context.esys, object, UInt32(ESYS_TR_PASSWORD), UInt32(ESYS_TR_NONE),
                                      UInt32(ESYS_TR_NONE), &out), "Unseal")
        guard let out else { throw TPMError.failed(command: "Unseal", code: 0) }
        defer {
            explicit_bzero(out, MemoryLayout<TPM2B_SENSITIVE_DATA>.size)
            Esys_Free(out)
        }
        let secret = SecureBuffer(count: Int(out.pointee.size))
        withUnsafeBytes(of: &out.pointee.buffer) { secret.mutableBytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<secret.count])) }
        return secret
    }

    private static func marshal<T>(_ value: UnsafeMutablePointer<T>,
                                   _ function: (UnsafePointer<T>?, UnsafeMutablePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?) -> TSS2_RC) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: MemoryLayout<T>.size + 16)
        var offset = 0
        let rc = buffer.withUnsafeMutableBufferPointer { function(value, $0.baseAddress, $0.count, &offset) }
        guard rc == 0 else { throw TPMError.failed(command: "marshal", code: UInt32(rc)) }
        return Array(buffer[..<offset])
    }

    private static func unmarshal<T>(_ bytes: [UInt8], into value: inout T,
                                     _ function: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<T>?) -> TSS2_RC) throws {
        var offset = 0
        let rc = bytes.withUnsafeBufferPointer { function($0.baseAddress, $0.count, &offset, &value) }
        guard rc == 0, offset == bytes.count else { throw TPMError.failed(command: "unmarshal (a damaged blob)", code: UInt32(rc)) }
    }
}
