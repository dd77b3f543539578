// A vault of the kind banking and health apps carry: secrets behind Face ID or Touch ID
// of the currently enrolled user, read with a system prompt, or without a second one
// through an LAContext the app already evaluated at sign-in.
import Foundation
import LocalAuthentication
import Security

public enum VaultError: Error, Equatable {
    case notFound
    case cancelled
    case authenticationFailed
    case interactionNotAllowed
    case biometryUnavailable(LAError.Code)
    case unhandled(OSStatus)

    init(status: OSStatus) {
        switch status {
        case errSecItemNotFound: self = .notFound
        case errSecUserCanceled: self = .cancelled
        case errSecAuthFailed: self = .authenticationFailed
        case errSecInteractionNotAllowed: self = .interactionNotAllowed
        default: self = .unhandled(status)
        }
    }
}

public struct BiometricVault {
    public let service: String

    public init(service: String) {
        self.service = service
    }

    /// Whether Face ID or Touch ID can be used now, and which.
    public static func availability() -> (type: LABiometryType, error: LAError.Code?) {
        let context = LAContext()
        var error: NSError?
        let usable = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
        let code = usable ? nil : error.flatMap { LAError.Code(rawValue: $0.code) } ?? .biometryNotAvailable
        return (context.biometryType, code)
    }

    /// Stores `secret` so that only the currently enrolled face or finger reads it.
    public func store(_ secret: String, account: String) throws {
        var error: Unmanaged<CFError>?
        guard let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault,
                                                           kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly,
                                                           .biometryCurrentSet, &error) else {
            let cfError = error!.takeRetainedValue()
            throw VaultError.unhandled(OSStatus(CFErrorGetCode(cfError)))
        }
        let item: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecAttrAccessControl as String: access,
            kSecValueData as String: Data(secret.utf8),
        ]
        let status = SecItemAdd(item as CFDictionary, nil)
        guard status == errSecSuccess else { throw VaultError(status: status) }
    }

    /// Reads a secret: the system asks for the user's face unless `context` already did.
    public func read(account: String, prompt: String, context: LAContext? = nil,
                     allowPrompt: Bool = true) throws -> String {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecReturnData as String: true,
            kSecMatchLimit as String: kSecMatchLimitOne,
            kSecUseOperationPrompt as String: prompt,
        ]
        if let context { query[kSecUseAuthenticationContext as String] = context }
        if !allowPrompt { query[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUIFail }
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        guard status == errSecSuccess else { throw VaultError(status: status) }
        guard let data = result as? Data else { throw VaultError.unhandled(errSecDecode) }
        return String(decoding: data, as: UTF8.self)
    }

    public func delete(account: String) {
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                    kSecAttrService as String: service,
                                    kSecAttrAccount as String: account]
        _ = SecItemDelete(query as CFDictionary)
    }

    /// Signs the user in with Face ID once; the context then reads without a second prompt.
    public func signIn(reason: String) async throws -> LAContext {
        let context = LAContext()
        context.localizedCancelTitle = "Not now"
        do {
            _ = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: reason)
        } catch LAError.userCancel {
            throw VaultError.cancelled
        } catch let error as LAError {
            throw VaultError.biometryUnavailable(error.code)
        }
        return context
    }
}
