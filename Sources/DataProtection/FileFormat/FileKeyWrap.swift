// Wrapping a file's own key under its class: XChaCha20-Poly1305 with the class key for
// none, complete and untilFirstAuth; an X25519 sealed box to the class public key for
// completeUnlessOpen, so files can be created while the private key is wiped.

public enum FileKeyWrap {
    public static let fileKeySize = AEAD.keySize

    static func additionalData(fileID: [UInt8], protectionClass: ProtectionClass) -> [UInt8] {
        Array("dpfs.filekey.v1".utf8) + fileID + [protectionClass.rawValue]
    }

    /// Wraps `fileKey`; nil when the class cannot wrap now (complete while locked, …).
    /// `nonce`: fresh random bytes for a wrap under a class key (AEAD.nonceSize), nil
    /// for the system generator's; a sealed box makes its own.
    public static func wrap(_ fileKey: SecureBuffer, fileID: [UInt8], as protectionClass: ProtectionClass,
                            device: LockStateManager, nonce: UnsafeRawBufferPointer? = nil) -> [UInt8]? {
        if protectionClass == .completeUnlessOpen {
            // The file identity is sealed beside the key, binding the key to this file.
            let payload = SecureBuffer(count: fileKeySize + fileID.count)
            payload.mutableBytes.copyMemory(from: fileKey.bytes)
            fileID.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: payload.mutableBytes[fileKeySize...]).copyMemory(from: $0)
            }
            return SealedBox.seal(payload, to: device.completeUnlessOpenPublicKey)
        }
        return device.withClassKey(protectionClass) { classKey in
            AEAD.seal(fileKey, additionalData: additionalData(fileID: fileID, protectionClass: protectionClass),
                      key: classKey, nonce: nonce)
        }
    }

    public enum UnwrapFailure: Error { case unavailable, damaged }

    public static func unwrap(_ wrapped: [UInt8], fileID: [UInt8], as protectionClass: ProtectionClass,
                              device: LockStateManager) throws(UnwrapFailure) -> SecureBuffer {
        let result: SecureBuffer?? = device.withClassKey(protectionClass) { classKey -> SecureBuffer? in
            if protectionClass == .completeUnlessOpen {
                guard let payload = SealedBox.open(wrapped, publicKey: device.completeUnlessOpenPublicKey,
                                                   privateKey: classKey),
                      payload.count == fileKeySize + fileID.count,
                      Array(payload.bytes[fileKeySize...]) == fileID else { return nil }
                return SecureBuffer(copying: UnsafeRawBufferPointer(rebasing: payload.bytes[0..<fileKeySize]))
            }
            return AEAD.open(wrapped, additionalData: additionalData(fileID: fileID, protectionClass: protectionClass),
                             key: classKey)
        }
        guard let available = result else { throw .unavailable }
        guard let key = available else { throw .damaged }
        return key
    }
}
