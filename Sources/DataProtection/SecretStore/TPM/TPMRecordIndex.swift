// The device's record (DeviceRecord) in a TPM NV index of the owner hierarchy: a copy
// of the device directory cannot bring an older one back, and each NV_Write is atomic
// in the TPM. The index is named by the device's UUID (0x018xxxxx, the owner range)
// and holds the record's JSON padded with spaces to a fixed size.
import CTss

enum TPMRecordIndex {
    static let size = 256

    static func handle(for deviceUUID: String) -> UInt32 {
        var digest = [UInt8](repeating: 0, count: 16)
        Array("dpfs.nv-index.v1.\(deviceUUID)".utf8).withUnsafeBytes { message in
            digest.withUnsafeMutableBytes { Sodium.hash(message, key: nil, into: $0) }
        }
        let low = (UInt32(digest[0]) << 16 | UInt32(digest[1]) << 8 | UInt32(digest[2])) & 0x3F_FFFF
        return 0x0180_0000 | low
    }

    /// Defines the index (owner read/write, not subject to dictionary-attack lockout).
    static func define(_ context: TPMContext, for deviceUUID: String) throws {
        var info = TPM2B_NV_PUBLIC()
        info.nvPublic.nvIndex = handle(for: deviceUUID)
        info.nvPublic.nameAlg = 0x000B
        // TPMA_NV_OWNERWRITE | TPMA_NV_OWNERREAD | TPMA_NV_NO_DA; an ordinary index.
        info.nvPublic.attributes = 0x0000_0002 | 0x0002_0000 | 0x0200_0000
        info.nvPublic.dataSize = UInt16(size)
        var auth = TPM2B_AUTH()
        var nv: ESYS_TR = UInt32(ESYS_TR_NONE)
        try context.check(Esys_NV_DefineSpace(context.esys, UInt32(ESYS_TR_RH_OWNER), UInt32(ESYS_TR_PASSWORD),
                                              UInt32(ESYS_TR_NONE), UInt32(ESYS_TR_NONE), &auth, &info, &nv),
                          "NV_DefineSpace")
        _ = Esys_TR_Close(context.esys, &nv)
    }

    static func undefine(_ context: TPMContext, for deviceUUID: String) {
        guard let nv = try? open(context, deviceUUID) else { return }
        _ = Esys_NV_UndefineSpace(context.esys, UInt32(ESYS_TR_RH_OWNER), nv, UInt32(ESYS_TR_PASSWORD),
                                  UInt32(ESYS_TR_NONE), UInt32(ESYS_TR_NONE))
    }

    private static func open(_ context: TPMContext, _ deviceUUID: String) throws -> ESYS_TR {
        var nv: ESYS_TR = UInt32(ESYS_TR_NONE)
        try context.check(Esys_TR_FromTPMPublic(context.esys, handle(for: deviceUUID), UInt32(ESYS_TR_NONE),
                                                UInt32(ESYS_TR_NONE), UInt32(ESYS_TR_NONE), &nv), "TR_FromTPMPublic")
        return nv
    }

    /// The record's bytes; nil when the index does not exist or was never written.
    static func read(_ context: TPMContext, for deviceUUID: String) throws -> [UInt8]? {
        let nv: ESYS_TR
        do { nv = try open(context, deviceUUID) } catch TPMError.failed { return nil }
        var out: UnsafeMutablePointer<TPM2B_MAX_NV_BUFFER>?
        let rc = Esys_NV_Read(context.esys, UInt32(ESYS_TR_RH_OWNER), nv, UInt32(ESYS_TR_PASSWORD),
                              UInt32(ESYS_TR_NONE), UInt32(ESYS_TR_NONE), UInt16(size), 0, &out)
        if TPMError.isFromTPM(rc) && TPMError.base(rc) == 0x14A { return nil }  // TPM_RC_NV_UNINITIALIZED
        if TPMError.isFromTPM(rc) && TPMError.base(rc) == 0x146 {  // TPM_RC_NV_RANGE
            // An index of 128 bytes, from before the record held the keychain's digests.
            throw TPMError.failed(command: "NV_Read (the device's NV index is smaller than \(size) bytes: "
                                  + "a device made by an older dpfs; make a new one with dpfs init)", code: UInt32(rc))
        }
        try context.check(rc, "NV_Read")
        defer { Esys_Free(out) }
        guard let out else { return nil }
        return withUnsafeBytes(of: &out.pointee.buffer) { Array($0[..<Int(out.pointee.size)]) }
    }

    static func write(_ context: TPMContext, _ bytes: [UInt8], for deviceUUID: String) throws {
        guard bytes.count <= size else { throw TPMError.failed(command: "NV_Write (the record is too long)", code: 0) }
        let nv = try open(context, deviceUUID)
        var data = TPM2B_MAX_NV_BUFFER()
        data.size = UInt16(size)
        let padded = bytes + [UInt8](repeating: 0x20, count: size - bytes.count)
        withUnsafeMutableBytes(of: &data.buffer) { $0.copyBytes(from: padded) }
        try context.check(Esys_NV_Write(context.esys, UInt32(ESYS_TR_RH_OWNER), nv, UInt32(ESYS_TR_PASSWORD),
                                        UInt32(ESYS_TR_NONE), UInt32(ESYS_TR_NONE), &data, 0), "NV_Write")
    }
}
