// A device-bound signing key, as sign-in and device-binding flows keep one on iOS: a
// Secure Enclave P-256 key made once (WhenUnlockedThisDeviceOnly), found again by its
// application tag on every later run, signing a server's challenge; the server checks
// the signature with the public key alone. The private key never leaves the device:
// exporting it fails. With --locked (the device locked) it shows what iOS answers
// then: the key cannot be found or used until the user unlocks.
// With --approve ANSWER it uses a second key, made behind Face ID
// ([.privateKeyUsage, .biometryCurrentSet]), to approve a payment: finding that key
// asks nothing, signing asks the user, whose answer the test queued beforehand with
// `dpfs biometry respond` (ANSWER says which: match signs, nomatch is errSecAuthFailed,
// cancel errSecUserCanceled, reenrolled — the face enrolled anew since — errSecAuthFailed).
// Run: DPFS_MOUNT=/mnt/sandbox .build/debug/ExampleSecureEnclaveSigningKey [--locked | --approve ANSWER]
import ExampleSupport
import Foundation
import Security

let run = ExampleRun()
let tag = Data("com.example.bank.device-key".utf8)

func findKey(tag: Data = tag) -> (OSStatus, SecKey?) {
    let query: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecAttrApplicationTag as String: tag,
        kSecUseOperationPrompt as String: "Approve the payment",
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecReturnRef as String: true,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    return (status, item.map { $0 as! SecKey })  // kSecReturnRef of a key item is a SecKey
}

func createKey(tag: Data = tag, access: SecAccessControl? = nil) -> (OSStatus, SecKey?) {
    var privateAttributes: [String: Any] = [
        kSecAttrIsPermanent as String: true,
        kSecAttrApplicationTag as String: tag,
    ]
    if let access {
        privateAttributes[kSecAttrAccessControl as String] = access
    } else {
        privateAttributes[kSecAttrAccessible as String] = kSecAttrAccessibleWhenUnlockedThisDeviceOnly
    }
    let attributes: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecAttrKeySizeInBits as String: 256,
        kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
        kSecPrivateKeyAttrs as String: privateAttributes,
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

/// The payment-approval key behind Face ID: made on first use, then found by tag
/// (which asks nothing); each signature asks the user.
@MainActor func approvePayment(expecting answer: String) -> Never {
    let approvalTag = Data("com.example.bank.approval-key".utf8)
    var (status, found) = findKey(tag: approvalTag)
    if status == errSecItemNotFound {
        let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                                                     [.privateKeyUsage, .biometryCurrentSet], nil)
        run.check("SecAccessControlCreateWithFlags([.privateKeyUsage, .biometryCurrentSet])", access != nil)
        run.expect("SecKeyCreateRandomKey(Secure Enclave, behind Face ID), no prompt",
                   createKey(tag: approvalTag, access: access).0, errSecSuccess)
        (status, found) = findKey(tag: approvalTag)
    }
    run.expect("SecItemCopyMatching(the approval key by tag), no prompt", status, errSecSuccess)
    guard let key = found, let publicKey = SecKeyCopyPublicKey(key),
          let publicKeyData = SecKeyCopyExternalRepresentation(publicKey, nil) as Data? else {
        run.check("the approval key and its public key", false)
        run.finish()
    }
    print("approval key \(publicKeyData.map { String(format: "%02x", $0) }.joined())")
    let payment = Data("pay 120.00 EUR to ACME, nonce \(UInt64.random(in: 0...UInt64.max))".utf8)
    var error: Unmanaged<CFError>?
    let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, payment as CFData, &error) as Data?
    let signStatus = error.map { OSStatus(CFErrorGetCode($0.takeRetainedValue())) } ?? errSecSuccess
    switch answer {
    case "match":
        run.expect("SecKeyCreateSignature(payment), the user's face", signStatus, errSecSuccess)
        run.check("the server verifies the approval",
                  signature.map { serverVerifies(publicKeyData, payment, $0) } ?? false)
    case "nomatch":
        run.expect("SecKeyCreateSignature(payment), a stranger's face", signStatus, errSecAuthFailed)
    case "cancel":
        run.expect("SecKeyCreateSignature(payment), the user cancels", signStatus, errSecUserCanceled)
    case "reenrolled":
        run.expect("SecKeyCreateSignature(payment), Face ID enrolled anew since the key was made", signStatus, errSecAuthFailed)
    default:
        run.check("--approve takes match, nomatch, cancel or reenrolled", false)
    }
    run.finish()
}

if let index = CommandLine.arguments.firstIndex(of: "--approve") {
    approvePayment(expecting: index + 1 < CommandLine.arguments.count ? CommandLine.arguments[index + 1] : "")
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
