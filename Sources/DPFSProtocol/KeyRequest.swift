// What a SecKey call asks of the daemon and what it answers. Only what needs a key the
// client may not hold crosses the socket: making a Secure Enclave key, and its
// private-key operations. Ordinary keys are made in the app (a permanent one is stored
// with a keychain add); public-key work (verify, encrypt) and the operations of
// ordinary keys run in the app.
import Foundation

public struct KeyRequest: Codable, Sendable {
    public enum Operation: String, Codable, Sendable {
        /// A new Secure Enclave P-256 key pair ("tokenID" "secureEnclave"; any other key
        /// is errSecParam); with `permanent`, stored as a key item.
        case generate
        /// ECDSA over `input` (a message or a digest, as `algorithm` says).
        case sign
        /// ECIES decryption of `input`.
        case decrypt
        /// ECDH: `input` is the other party's public key (X9.63).
        case keyExchange
    }

    public var operation: Operation
    /// Bundle ID of the calling app; nil means the sandbox's own app.
    public var app: String?
    /// generate: the key item's attributes in the item store's names ("label",
    /// "applicationTag" in hex, "accessible", "accessGroup", "tokenID", "accessControl"
    /// as SecAccessControlCreateFlags in decimal, …).
    public var attributes: [String: String]
    /// generate: whether the key becomes an item of the keychain.
    public var permanent: Bool
    /// sign, decrypt, keyExchange: the Secure Enclave key's token, as generate or a
    /// find of its item gave it (dpfs(5) "Secure Enclave keys").
    public var token: Data?
    /// sign, decrypt: Apple's SecKeyAlgorithm name ("algid:sign:ECDSA:message-X962:SHA256", …).
    public var algorithm: String?
    public var input: Data?
    /// sign, decrypt, keyExchange of a key behind an access control: how the simulated
    /// user may be asked, and the LAContext whose success counts (kSecUseAuthenticationContext
    /// in the query that found the key, or in SecKeyCreateRandomKey's parameters).
    public var authentication: KeychainAuthentication?

    public init(operation: Operation, app: String? = nil, attributes: [String: String] = [:], permanent: Bool = false,
                token: Data? = nil, algorithm: String? = nil, input: Data? = nil,
                authentication: KeychainAuthentication? = nil) {
        self.operation = operation; self.app = app; self.attributes = attributes; self.permanent = permanent
        self.token = token; self.algorithm = algorithm; self.input = input; self.authentication = authentication
    }
}

public struct KeyResponse: Codable, Sendable {
    /// OSStatus, with Apple's numbers.
    public var status: Int32
    /// generate: the public key, X9.63 uncompressed (65 bytes).
    public var publicKey: Data?
    /// generate of a Secure Enclave key: its token. Opaque: sealed under keys only the
    /// daemon holds, it is no export of the key.
    public var token: Data?
    /// generate of a permanent key: the item's attributes, as a find returns them.
    public var attributes: [String: String]?
    /// sign, decrypt, keyExchange: the signature (DER), the plaintext, the shared secret.
    public var output: Data?
    /// Why a call failed, when the status alone would leave the caller guessing.
    public var message: String?

    public init(status: Int32, publicKey: Data? = nil, token: Data? = nil,
                attributes: [String: String]? = nil, output: Data? = nil, message: String? = nil) {
        self.status = status; self.publicKey = publicKey; self.token = token
        self.attributes = attributes; self.output = output; self.message = message
    }
}
