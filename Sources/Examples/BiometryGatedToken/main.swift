// A banking app's session token behind Face ID, as iOS apps store it: kSecAttrAccessControl
// with .biometryCurrentSet, read with a prompt, an LAContext evaluated once and lent to the
// keychain. The test's hand (DeviceControl, under `dpfs run --device-control`) plays the
// user: a match reads the token, a stranger's face or a cancel does not, five failed
// matches lock Face ID out until the passcode, and a re-enrolled face makes the token
// invalid for good, as on iOS.
// Run: dpfs run MOUNT --device-control -- .build/debug/ExampleBiometryGatedToken --passcode-file F
import DataProtectionKit
import ExampleSupport
import Foundation
import LocalAuthentication
import Security

let run = ExampleRun()
let service = "com.example.bank.session"
let account = "token"

guard let fileIndex = CommandLine.arguments.firstIndex(of: "--passcode-file"),
      fileIndex + 1 < CommandLine.arguments.count else {
    print("usage: ExampleBiometryGatedToken --passcode-file F (the device passcode, for the user's passcode answers)")
    exit(64)
}
let passcodeFile = CommandLine.arguments[fileIndex + 1]
let user = try DeviceControl()

@MainActor func storeToken(_ token: String) -> OSStatus {
    var error: Unmanaged<CFError>?
    guard let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                                                       .biometryCurrentSet, &error) else {
        print("SecAccessControlCreateWithFlags: \(error!.takeRetainedValue() as Error)")
        return errSecParam
    }
    let item: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                               kSecAttrService as String: service,
                               kSecAttrAccount as String: account,
                               kSecAttrAccessControl as String: access,
                               kSecValueData as String: Data(token.utf8)]
    return SecItemAdd(item as CFDictionary, nil)
}

@MainActor func readToken(context: LAContext? = nil, ui: CFString? = nil) -> (OSStatus, String?) {
    var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                kSecAttrService as String: service,
                                kSecAttrAccount as String: account,
                                kSecReturnData as String: true,
                                kSecUseOperationPrompt as String: "Sign in to your bank"]
    if let context { query[kSecUseAuthenticationContext as String] = context }
    if let ui { query[kSecUseAuthenticationUI as String] = ui }
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    return (status, (result as? Data).flatMap { String(data: $0, encoding: .utf8) })
}

_ = SecItemDelete([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service] as CFDictionary)
try user.enrollBiometry(.faceID)
run.check("SecAccessControlCreateWithFlags refuses .or with .and",
          SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, [.biometryAny, .or, .and, .devicePasscode], nil) == nil)
run.expect("SecItemAdd(token behind .biometryCurrentSet), no prompt", storeToken("s3ss10n"), errSecSuccess)

try user.respondToBiometry(.match)
let (matched, token) = readToken()
run.expect("SecItemCopyMatching, the user's face", matched, errSecSuccess)
run.check("the token read back is the one stored", token == "s3ss10n")
try user.respondToBiometry(.nomatch)
run.expect("SecItemCopyMatching, a stranger's face", readToken().0, errSecAuthFailed)
try user.respondToBiometry(.cancel)
run.expect("SecItemCopyMatching, the user cancels", readToken().0, errSecUserCanceled)
run.expect("SecItemCopyMatching with kSecUseAuthenticationUIFail", readToken(ui: kSecUseAuthenticationUIFail).0,
           errSecInteractionNotAllowed)

// One Face ID prompt for several reads: an evaluated LAContext lent to the keychain.
let context = LAContext()
var canError: NSError?
run.check("canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics)",
          context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &canError))
run.check("biometryType is .faceID", context.biometryType == .faceID)
let enrolledState = context.evaluatedPolicyDomainState
try user.respondToBiometry(.match)
let evaluated = (try? await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics,
                                                    localizedReason: "Sign in to your bank")) ?? false
run.check("evaluatePolicy with the user's face", evaluated)
let (reused, _) = readToken(context: context, ui: kSecUseAuthenticationUIFail)
run.expect("SecItemCopyMatching with the evaluated context, no second prompt", reused, errSecSuccess)
context.invalidate()
do {
    _ = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "again")
    run.check("an invalidated context fails with LAError.invalidContext", false)
} catch LAError.invalidContext {
    run.check("an invalidated context fails with LAError.invalidContext", true)
}

// Five stranger's faces lock Face ID out until the passcode is entered.
try user.respondToBiometry(.nomatch, times: 5)
for attempt in 1...5 { run.expect("SecItemCopyMatching, stranger's face #\(attempt)", readToken().0, errSecAuthFailed) }
var lockoutError: NSError?
let lockedContext = LAContext()
run.check("canEvaluatePolicy: LAError.biometryLockout (-8)",
          !lockedContext.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &lockoutError)
              && lockoutError?.code == LAError.Code.biometryLockout.rawValue && lockoutError?.domain == LAErrorDomain)
run.check("deviceOwnerAuthentication (the passcode) stays possible",
          lockedContext.canEvaluatePolicy(.deviceOwnerAuthentication, error: nil))
try user.respondWithPasscode(DevicePasscode(file: passcodeFile))
let passcodeEvaluated = (try? await lockedContext.evaluatePolicy(.deviceOwnerAuthentication,
                                                                  localizedReason: "Unlock Face ID")) ?? false
run.check("evaluatePolicy(.deviceOwnerAuthentication) with the passcode", passcodeEvaluated)
try user.respondToBiometry(.match)
run.expect("SecItemCopyMatching, the user's face after the passcode", readToken().0, errSecSuccess)

// A re-enrolled face: the token is gone for good, as iOS invalidates it.
try user.reenrollBiometry()
let afterContext = LAContext()
_ = afterContext.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
run.check("evaluatedPolicyDomainState changes at re-enrollment",
          enrolledState != nil && afterContext.evaluatedPolicyDomainState != enrolledState)
try user.respondToBiometry(.match)
run.expect("SecItemCopyMatching after re-enrollment", readToken().0, errSecItemNotFound)
run.expect("SecItemDelete(the invalid token)",
           SecItemDelete([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service] as CFDictionary),
           errSecSuccess)
let leftover = try user.biometry.queuedAnswers
run.check("the match given after re-enrollment was not asked for", leftover == 1)
// Leave no answer for a later prompt: the new face signs in.
if leftover > 0 {
    let signIn = LAContext()
    run.check("the re-enrolled face evaluates",
              (try? await signIn.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "Sign in")) == true)
}
run.finish()
