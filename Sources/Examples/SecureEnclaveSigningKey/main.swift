// A device-bound signing key, as sign-in and device-binding flows keep one on iOS: a
// Secure Enclave P-256 key made once (WhenUnlockedThisDeviceOnly), found again by its
// application tag on every later run, signing a server's challenge; the server checks
// the signature with the public key alone. The private key never leaves the device:
// exporting it fails. With --locked (the device locked) it shows what iOS answers
// then: the key cannot be found or used until the user unlocks.
// Run: DPFS_MOUNT=/mnt/sandbox .build/debug/ExampleSecureEnclaveSigningKey [--locked]
import ExampleSupport
import Foundation
import Security

let run = ExampleRun()
let tag = Data("com.example.bank.device-key".utf8)

func findKey() -> (OSStatus, SecKey?) {
    let query: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecAttrApplicationTag as String: tag,
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecReturnRef as String: true,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    return (status, item.map { $0 as! SecKey })  // kSecReturnRef of a key item is a SecKey
}

func createKey() -> (OSStatus, SecKey?) {
    let attributes: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecAttrKeySizeInBits as String: 256,
        kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
        kSecPrivateKeyAttrs as String: [
            kSecAttrIsPermanent as String: true,
            kSecAttrApplicationTag as String: tag,
            kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
        ] as [String: Any],
    ]
    var error: Unmanaged<CFError>?
    let key = SecKeyCreateRandomKey(attributes as CFDictionary, &error)
    let status = error.map { OSStatus(CFErrorGetCode($0.takeRetainedValue())) } ?? errSecSuccess
    return (status, key)
}

/// The server's side: only the public key, in its X9.63 form, as an app would upload it.
func serverVerifies(_ publicKeyData: Data, _ challenge: Data, _ signature: Data) -> Bool {
    let attributes: [String: Any] = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                                     kSecAttrKeyClass as String: kSecAttrKeyClassPublic]
    guard let publicKey = SecKeyCreateWithData(publicKeyData as CFData, attributes as CFDictionary, nil) else { return false }
    return SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, challenge as CFData, signature as CFData, nil)
}

if run.deviceIsLocked {
    run.expect("SecItemCopyMatching(the device key, locked)", findKey().0, errSecInteractionNotAllowed)
    run.finish()
}

var (status, found) = findKey()
if status == errSecItemNotFound {
    run.expect("SecKeyCreateRandomKey(Secure Enclave, permanent)", createKey().0, errSecSuccess)
    (status, found) = findKey()
}
run.expect("SecItemCopyMatching(the device key by tag)", status, errSecSuccess)
guard let privateKey = found, let publicKey = SecKeyCopyPublicKey(privateKey),
      let publicKeyData = SecKeyCopyExternalRepresentation(publicKey, nil) as Data? else {
    run.check("the device key and its public key", false)
    run.finish()
}
print("public key \(publicKeyData.map { String(format: "%02x", $0) }.joined())")

var exportError: Unmanaged<CFError>?
run.check("the private key cannot be exported",
          SecKeyCopyExternalRepresentation(privateKey, &exportError) == nil && exportError?.takeRetainedValue() != nil)

var challenge = Data(count: 32)
_ = challenge.withUnsafeMutableBytes { SecRandomCopyBytes(kSecRandomDefault, 32, $0.baseAddress!) }
var signError: Unmanaged<CFError>?
let signature = SecKeyCreateSignature(privateKey, .ecdsaSignatureMessageX962SHA256, challenge as CFData, &signError) as Data?
run.expect("SecKeyCreateSignature(challenge)",
           signError.map { OSStatus(CFErrorGetCode($0.takeRetainedValue())) } ?? errSecSuccess, errSecSuccess)
run.check("the server verifies the signature with the public key",
          signature.map { serverVerifies(publicKeyData, challenge, $0) } ?? false)
run.check("and refuses it for another challenge",
          !(signature.map { serverVerifies(publicKeyData, Data("another".utf8), $0) } ?? true))
run.finish()
