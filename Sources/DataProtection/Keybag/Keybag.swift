// Keybag operations: create the class keys, wrap them under the passcode key (or the
// device key when no passcode is set), unwrap them at boot and unlock, and rewrap them
// on passcode change. Class keys pass only through SecureBuffers.
import Foundation

public enum UnwrapResult: ~Copyable {
    case unlocked(ClassKeySet)
    case wrongPasscode(fingerprint: [UInt8])
}

public enum Keybag {
    static let privateKeyName = "completeUnlessOpenPrivate"

    /// The classes whose keys are wrapped by the passcode key when one is set.
    public static let passcodeClasses: [ProtectionClass] = [.complete, .completeUnlessOpen, .untilFirstAuth,
                                                            .completeWhenUserInactive]

    static func wrappedName(_ protectionClass: ProtectionClass) -> String {
        protectionClass == .completeUnlessOpen ? privateKeyName : protectionClass.name
    }

    static func additionalData(_ name: String) -> [UInt8] { Array("dpfs.classkey.v1.\(name)".utf8) }

    static func noPasscodeKey(_ deviceSecret: SecureBuffer) -> SecureBuffer {
        PasscodeKDF.deviceKey(deviceSecret: deviceSecret, purpose: "dpfs.no-passcode.v1")
    }

    static func noneClassKey(_ deviceSecret: SecureBuffer) -> SecureBuffer {
        PasscodeKDF.deviceKey(deviceSecret: deviceSecret, purpose: "dpfs.class-none.v1")
    }

    /// A new keybag with fresh class keys.
    public static func create(passcode: SecureBuffer?, deviceSecret: SecureBuffer,
                              defaultProtection: ProtectionClass, eraseAfter: Int?,
                              kdf: KDFParameters = .standard(), secretStore: String = "") throws -> KeybagFile {
        let pair = SealedBox.makeKeyPair()
        var keys = ClassKeySet()
        keys.insert(.random(count: AEAD.keySize), for: .none)
        keys.insert(.random(count: AEAD.keySize), for: .complete)
        keys.insert(.random(count: AEAD.keySize), for: .untilFirstAuth)
        keys.insert(.random(count: AEAD.keySize), for: .completeWhenUserInactive)
        keys.insert(pair.privateKey, for: .completeUnlessOpen)
        var file = KeybagFile(kdf: kdf, passcodeSet: false, wrappedKeys: [:],
                              completeUnlessOpenPublicKey: Bytes(pair.publicKey),
                              defaultProtection: defaultProtection,
                              policy: PasscodePolicy(eraseAfter: eraseAfter))
        file.secretStore = secretStore
        try rewrap(&file, keys: keys, newPasscode: passcode, deviceSecret: deviceSecret)
        keys.wipeAll()
        return file
    }

    /// Wraps every class key anew: the passcode classes under the new passcode (or
    /// the device key when `newPasscode` is nil), class none under the device key.
    public static func rewrap(_ file: inout KeybagFile, keys: borrowing ClassKeySet,
                              newPasscode: SecureBuffer?, deviceSecret: SecureBuffer) throws {
        var kdf = file.kdf
        kdf.salt = Bytes(Sodium.randomBytes(kdf.salt.value.count))
        let wrappingKey = try newPasscode.map {
            try newPasscodeKey(&file, passcode: $0, kdf: kdf, deviceSecret: deviceSecret)
        } ?? noPasscodeKey(deviceSecret)
        if newPasscode == nil { file.tpmPasscodeGate = nil }
        var wrapped: [String: Bytes] = [:]
        for protectionClass in passcodeClasses {
            guard let key = keys.key(for: protectionClass) else { throw DeviceError.corruptKeybag("a class key is missing") }
            let name = wrappedName(protectionClass)
            wrapped[name] = Bytes(AEAD.seal(key, additionalData: additionalData(name), key: wrappingKey))
        }
        guard let noneKey = keys.key(for: .none) else { throw DeviceError.corruptKeybag("a class key is missing") }
        wrapped["none"] = Bytes(AEAD.seal(noneKey, additionalData: additionalData("none"),
                                          key: noneClassKey(deviceSecret)))
        file.kdf = kdf
        file.wrappedKeys = wrapped
        if file.passcodeSet && newPasscode == nil { file.passcodeRemovals = (file.passcodeRemovals ?? 0) + 1 }
        file.passcodeSet = newPasscode != nil
    }

    /// The keys available at boot: class none always; every class when no passcode is set.
    public static func bootKeys(_ file: KeybagFile, deviceSecret: SecureBuffer) throws -> ClassKeySet {
        var keys = ClassKeySet()
        keys.insert(try unwrap(file, "none", with: noneClassKey(deviceSecret)), for: .none)
        if !file.passcodeSet {
            let wrappingKey = noPasscodeKey(deviceSecret)
            for protectionClass in passcodeClasses {
                keys.insert(try unwrap(file, wrappedName(protectionClass), with: wrappingKey), for: protectionClass)
            }
        }
        return keys
    }

    /// Unwraps every class key with a passcode; a wrong passcode yields its fingerprint.
    public static func unlock(_ file: KeybagFile, passcode: SecureBuffer,
                              deviceSecret: SecureBuffer) throws -> UnwrapResult {
        let passcodeKey: SecureBuffer
        let print: [UInt8]
        switch try checkPasscode(file, passcode: passcode, deviceSecret: deviceSecret) {
        case .wrong(let fingerprint): return .wrongPasscode(fingerprint: fingerprint)
        case .key(let key, let fingerprint): passcodeKey = key; print = fingerprint
        }
        defer { passcodeKey.wipe() }
        var keys = try bootKeys(file, deviceSecret: deviceSecret)
        for protectionClass in passcodeClasses {
            let name = wrappedName(protectionClass)
            guard let sealed = file.wrappedKeys[name] else { throw DeviceError.corruptKeybag("\(name) key is missing") }
            guard let key = AEAD.open(sealed.value, additionalData: additionalData(name), key: passcodeKey) else {
                keys.wipeAll()
                return .wrongPasscode(fingerprint: print)
            }
            keys.insert(key, for: protectionClass)
        }
        return .unlocked(keys)
    }

    /// Crypto-shred: a keybag of fresh class keys and no passcode in place of `file`,
    /// so every file and item sealed before is unrecoverable. The policy keeps its
    /// count and says `erased`; the device's identity and store stay.
    public static func erased(_ file: KeybagFile, deviceSecret: SecureBuffer) throws -> KeybagFile {
        var fresh = try create(passcode: nil, deviceSecret: deviceSecret, defaultProtection: file.defaultProtection,
                               eraseAfter: nil, kdf: file.kdf)
        fresh.deviceUUID = file.deviceUUID
        fresh.secretStore = file.secretStore
        fresh.tpmSealedSecret = file.tpmSealedSecret
        fresh.policy = file.policy
        fresh.directoryClasses = file.directoryClasses
        fresh.generation = file.generation
        fresh.erasures = (file.erasures ?? 0) + 1
        fresh.policy.erased = true
        fresh.policy.retryAfter = nil
        fresh.policy.eraseAfter = nil
        return fresh
    }

    static func unwrap(_ file: KeybagFile, _ name: String, with key: SecureBuffer) throws -> SecureBuffer {
        guard let sealed = file.wrappedKeys[name],
              let secret = AEAD.open(sealed.value, additionalData: additionalData(name), key: key) else {
            throw DeviceError.corruptKeybag("the \(name) class key does not unwrap")
        }
        return secret
    }

    /// Identifies a wrong passcode without storing anything that helps guess it.
    static func fingerprint(of passcodeKey: SecureBuffer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 16)
        Array("dpfs.failed-attempt.v1".utf8).withUnsafeBytes { message in
            digest.withUnsafeMutableBytes { Sodium.hash(message, key: passcodeKey.bytes, into: $0) }
        }
        return digest
    }
}
