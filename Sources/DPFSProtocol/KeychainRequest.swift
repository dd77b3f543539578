// What a keychain call asks and answers, as it crosses the control socket.
import Foundation

public struct KeychainRequest: Codable, Sendable {
    public enum Operation: String, Codable, Sendable { case add, find, update, delete }

    public var operation: Operation
    /// Bundle ID of the calling app; nil means the sandbox's own app.
    public var app: String?
    /// Query or new-item attributes by SecItem name ("class", "service", "account",
    /// "server", "protocol", "port", "path", "securityDomain", "authenticationType",
    /// "accessGroup", "accessible", "synchronizable", "label", …).
    public var attributes: [String: String]
    /// Attributes given as bytes (a CFData on iOS) where the class keeps them as blobs
    /// ("service", "account", "path", "securityDomain", "server", "label",
    /// "description", "comment"): compared with `attributes`' text by their bytes, and
    /// returned in an item's `dataAttributes`. A name is in one map, never two.
    public var dataAttributes: [String: Data]?
    /// "generic" given as text (a CFString on iOS), where `attributes` carries it as
    /// bytes in hex: compared with those by its UTF-8 bytes, and returned in an item's
    /// `textAttributes`.
    public var textAttributes: [String: String]?
    /// The secret for add.
    public var data: Data?
    /// For update: attributes to change, and new data.
    public var updateAttributes: [String: String]
    /// For update: attributes to change to bytes, as `dataAttributes`.
    public var updateDataAttributes: [String: Data]?
    /// For update: attributes to change to text, as `textAttributes`.
    public var updateTextAttributes: [String: String]?
    public var newData: Data?
    /// "one" (default) or "all".
    public var limit: String?
    /// "data", "attributes" or "both"; nil means data for find.
    public var returning: String?
    /// kSecUseAuthenticationUI, kSecUseOperationPrompt, kSecUseAuthenticationContext;
    /// nil: ask the user when an item's access control requires it.
    public var authentication: KeychainAuthentication?

    public init(operation: Operation, app: String? = nil, attributes: [String: String] = [:],
                data: Data? = nil, updateAttributes: [String: String] = [:], newData: Data? = nil,
                limit: String? = nil, returning: String? = nil) {
        self.operation = operation; self.app = app; self.attributes = attributes; self.data = data
        self.updateAttributes = updateAttributes; self.newData = newData
        self.limit = limit; self.returning = returning
    }
}

public struct KeychainResponse: Codable, Sendable {
    public struct Item: Codable, Sendable {
        public var attributes: [String: String]?
        /// The attributes the item was given as bytes, by the same names.
        public var dataAttributes: [String: Data]?
        /// The attributes the item was given as text where `attributes` has bytes in hex.
        public var textAttributes: [String: String]?
        public var data: Data?
        public init(attributes: [String: String]? = nil, dataAttributes: [String: Data]? = nil,
                    textAttributes: [String: String]? = nil, data: Data? = nil) {
            self.attributes = attributes; self.dataAttributes = dataAttributes; self.textAttributes = textAttributes
            self.data = data
        }

        /// The bytes the item takes in a reply's body.
        public var replySize: Int { KeychainWireForm.size(of: self) }
    }

    /// The most a reply's items may take together (their `replySize`), leaving room in
    /// a frame for the rest of the reply.
    public static let maxItemsSize = ControlProtocol.maxBodySize - 4096

    /// OSStatus, with Apple's numbers.
    public var status: Int32
    public var items: [Item]
    /// Why a call failed, when the status alone would leave the caller guessing.
    public var message: String?

    public init(status: Int32, items: [Item] = [], message: String? = nil) {
        self.status = status; self.items = items; self.message = message
    }
}
