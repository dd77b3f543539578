// The keychain call's request and reply, the messages an app sends most, written to and
// read from their bytes directly: the same bytes the Codable conformances give (field
// by field, in declaration order, an absent optional left out) and the same messages
// back, without a WireValue tree, coding containers or generic metadata lookups in
// between. Any other message or shape (a reply with a device status, a field of an
// unexpected kind…) goes through Codable, which also reports every error: `nil` here
// means "not this fast form", never "malformed". Attributes given as bytes are rare
// (wrappers that store a key's name as Data), a generic given as text rarer: a message
// carrying any goes through Codable too.
import Foundation

enum KeychainWireForm {
    // MARK: Writing

    static func bytes(of request: ControlRequest) -> [UInt8]? {
        guard case .keychain(let keychain) = request, keychain.dataAttributes == nil,
              keychain.updateDataAttributes == nil, keychain.textAttributes == nil,
              keychain.updateTextAttributes == nil else { return nil }
        var out = WireWriter(capacity: 160 + (keychain.data?.count ?? 0) + (keychain.newData?.count ?? 0))
        out.map(count: 1)
        out.key("keychain")
        out.map(count: 1)
        out.key("_0")
        write(keychain, to: &out)
        return out.bytes
    }

    static func write(_ request: KeychainRequest, to out: inout WireWriter) {
        let present = [request.app != nil, request.data != nil, request.newData != nil, request.limit != nil,
                       request.returning != nil, request.authentication != nil]
        out.map(count: 3 + present.count { $0 })
        out.key("operation")
        out.string(request.operation.rawValue)
        if let app = request.app { out.key("app"); out.string(app) }
        out.key("attributes")
        out.strings(request.attributes)
        if let data = request.data { out.key("data"); out.bytes(data) }
        out.key("updateAttributes")
        out.strings(request.updateAttributes)
        if let newData = request.newData { out.key("newData"); out.bytes(newData) }
        if let limit = request.limit { out.key("limit"); out.string(limit) }
        if let returning = request.returning { out.key("returning"); out.string(returning) }
        if let authentication = request.authentication { out.key("authentication"); write(authentication, to: &out) }
    }

    static func write(_ authentication: KeychainAuthentication, to out: inout WireWriter) {
        out.map(count: 1 + (authentication.prompt == nil ? 0 : 1) + (authentication.context == nil ? 0 : 1))
        out.key("interaction")
        out.string(authentication.interaction.rawValue)
        if let prompt = authentication.prompt { out.key("prompt"); out.string(prompt) }
        if let context = authentication.context { out.key("context"); out.string(context) }
    }

    static func bytes(of reply: ControlReply) -> [UInt8]? {
        guard reply.status == nil, reply.event == nil, reply.app == nil, reply.socket == nil, reply.failure == nil,
              reply.biometry == nil, reply.key == nil, reply.entitlements == nil, reply.sandboxApp == nil,
              reply.sync == nil, reply.apps == nil, reply.runs == nil,
              reply.keychain?.items.allSatisfy({ $0.dataAttributes == nil && $0.textAttributes == nil }) ?? true else { return nil }
        let dataSize = reply.keychain?.items.reduce(0) { $0 + ($1.data?.count ?? 0) } ?? 0
        var out = WireWriter(capacity: 128 + dataSize)
        out.map(count: 1 + [reply.error != nil, reply.message != nil, reply.keychain != nil].count { $0 })
        out.key("ok")
        out.bool(reply.ok)
        if let error = reply.error { out.key("error"); out.string(error) }
        if let message = reply.message { out.key("message"); out.string(message) }
        if let keychain = reply.keychain { out.key("keychain"); write(keychain, to: &out) }
        return out.bytes
    }

    static func write(_ response: KeychainResponse, to out: inout WireWriter) {
        out.map(count: response.message == nil ? 2 : 3)
        out.key("status")
        out.int(Int64(response.status))
        out.key("items")
        out.list(count: response.items.count)
        for item in response.items {
            out.map(count: (item.attributes == nil ? 0 : 1) + (item.data == nil ? 0 : 1))
            if let attributes = item.attributes { out.key("attributes"); out.strings(attributes) }
            if let data = item.data { out.key("data"); out.bytes(data) }
        }
        if let message = response.message { out.key("message"); out.string(message) }
    }

    /// The bytes `write(_:to:)` gives `item` in a reply's list of items.
    static func size(of item: KeychainResponse.Item) -> Int {
        var size = 1 + varintSize((item.attributes == nil ? 0 : 1) + (item.dataAttributes == nil ? 0 : 1)
                                      + (item.textAttributes == nil ? 0 : 1) + (item.data == nil ? 0 : 1))
        if let attributes = item.attributes {
            size += textSize("attributes") + 1 + varintSize(attributes.count)
            for (key, value) in attributes { size += textSize(key) + 1 + textSize(value) }
        }
        if let attributes = item.dataAttributes {
            size += textSize("dataAttributes") + 1 + varintSize(attributes.count)
            for (key, value) in attributes { size += textSize(key) + 1 + varintSize(value.count) + value.count }
        }
        if let attributes = item.textAttributes {
            size += textSize("textAttributes") + 1 + varintSize(attributes.count)
            for (key, value) in attributes { size += textSize(key) + 1 + textSize(value) }
        }
        if let data = item.data { size += textSize("data") + 1 + varintSize(data.count) + data.count }
        return size
    }

    private static func textSize(_ text: String) -> Int { varintSize(text.utf8.count) + text.utf8.count }

    private static func varintSize(_ value: Int) -> Int {
        var size = 1
        var rest = value >> 7
        while rest > 0 { size += 1; rest >>= 7 }
        return size
    }

    // MARK: Reading

    static func request(from bytes: [UInt8]) -> ControlRequest? {
        var reader = FieldReader(bytes: bytes, limits: .request)
        guard let request = try? reader.keychainEnvelope(), reader.atEnd else { return nil }
        return .keychain(request)
    }

    static func reply(from bytes: [UInt8]) -> ControlReply? {
        var reader = FieldReader(bytes: bytes, limits: .unlimited)
        guard let reply = try? reader.reply(), reader.atEnd else { return nil }
        return reply
    }
}

/// Reads the keychain messages' fields off the bytes. Each map's entries may come in any
/// order; a key's first entry wins and a later one is skipped, as the Codable reader
/// does. Anything else it does not expect throws `NotFastForm`.
private struct FieldReader {
    struct NotFastForm: Error {}

    var reader: WireValue.Reader

    init(bytes: [UInt8], limits: WireValue.Limits) { reader = WireValue.Reader(bytes: bytes, limits: limits) }

    var atEnd: Bool { reader.offset == reader.bytes.count }

    // The request: {"keychain": {"_0": {…}}}.
    mutating func keychainEnvelope() throws -> KeychainRequest {
        guard try mapCount() == 1, try key() == .keychain else { throw NotFastForm() }
        var request: KeychainRequest?
        for _ in 0..<(try mapCount()) {
            if try key() == ._0 && request == nil { request = try keychainRequest() } else { try skip() }
        }
        guard let request else { throw NotFastForm() }
        return request
    }

    mutating func keychainRequest() throws -> KeychainRequest {
        var operation: KeychainRequest.Operation?
        var attributes: [String: String]?, updateAttributes: [String: String]?
        var app: String??, limit: String??, returning: String??
        var data: Data??, newData: Data??
        var authentication: KeychainAuthentication??
        for _ in 0..<(try mapCount()) {
            switch try key() {
            case .operation where operation == nil:
                guard let named = KeychainRequest.Operation(rawValue: try string()) else { throw NotFastForm() }
                operation = named
            case .app where app == nil: app = try optionalString()
            case .attributes where attributes == nil: attributes = try strings()
            case .data where data == nil: data = try optionalData()
            case .updateAttributes where updateAttributes == nil: updateAttributes = try strings()
            case .newData where newData == nil: newData = try optionalData()
            case .limit where limit == nil: limit = try optionalString()
            case .returning where returning == nil: returning = try optionalString()
            case .authentication where authentication == nil: authentication = try nullOr { try $0.authentication() }
            case .dataAttributes, .updateDataAttributes, .textAttributes, .updateTextAttributes: throw NotFastForm()
            default: try skip()
            }
        }
        guard let operation, let attributes, let updateAttributes else { throw NotFastForm() }
        var request = KeychainRequest(operation: operation, app: app ?? nil, attributes: attributes, data: data ?? nil,
                                      updateAttributes: updateAttributes, newData: newData ?? nil,
                                      limit: limit ?? nil, returning: returning ?? nil)
        request.authentication = authentication ?? nil
        return request
    }

    mutating func authentication() throws -> KeychainAuthentication {
        var interaction: KeychainAuthentication.Interaction?
        var prompt: String??, context: String??
        for _ in 0..<(try mapCount()) {
            switch try key() {
            case .interaction where interaction == nil:
                guard let named = KeychainAuthentication.Interaction(rawValue: try string()) else { throw NotFastForm() }
                interaction = named
            case .prompt where prompt == nil: prompt = try optionalString()
            case .context where context == nil: context = try optionalString()
            default: try skip()
            }
        }
        guard let interaction else { throw NotFastForm() }
        return KeychainAuthentication(interaction: interaction, prompt: prompt ?? nil, context: context ?? nil)
    }

    // The reply: {"ok", "error", "message", "keychain"} and no other field.
    mutating func reply() throws -> ControlReply {
        var ok: Bool?
        var error: String??, message: String??
        var keychain: KeychainResponse??
        for _ in 0..<(try mapCount()) {
            switch try key() {
            case .ok where ok == nil: ok = try bool()
            case .error where error == nil: error = try optionalString()
            case .message where message == nil: message = try optionalString()
            case .keychain where keychain == nil: keychain = try nullOr { try $0.keychainResponse() }
            case .ok, .error, .message, .keychain: try skip()
            default: throw NotFastForm()
            }
        }
        guard let ok else { throw NotFastForm() }
        return ControlReply(ok: ok, error: error ?? nil, message: message ?? nil, keychain: keychain ?? nil)
    }

    mutating func keychainResponse() throws -> KeychainResponse {
        var status: Int32?
        var items: [KeychainResponse.Item]?
        var message: String??
        for _ in 0..<(try mapCount()) {
            switch try key() {
            case .status where status == nil: status = try int32()
            case .items where items == nil:
                guard try reader.byte() == WireValue.Tag.list.rawValue else { throw NotFastForm() }
                let count = try reader.count()
                var listed: [KeychainResponse.Item] = []
                listed.reserveCapacity(count)
                for _ in 0..<count { listed.append(try item()) }
                items = listed
            case .message where message == nil: message = try optionalString()
            default: try skip()
            }
        }
        guard let status, let items else { throw NotFastForm() }
        return KeychainResponse(status: status, items: items, message: message ?? nil)
    }

    mutating func item() throws -> KeychainResponse.Item {
        var attributes: [String: String]??
        var data: Data??
        for _ in 0..<(try mapCount()) {
            switch try key() {
            case .attributes where attributes == nil: attributes = try nullOr { try $0.strings() }
            case .data where data == nil: data = try optionalData()
            case .dataAttributes, .textAttributes: throw NotFastForm()
            default: try skip()
            }
        }
        return KeychainResponse.Item(attributes: attributes ?? nil, data: data ?? nil)
    }

    // MARK: Values

    /// The field names of the keychain messages; any other key reads as `.other`.
    enum Key: String, CaseIterable {
        case keychain, _0, operation, app, attributes, data, updateAttributes, newData, limit, returning
        case authentication, interaction, prompt, context, ok, error, message, status, items
        case dataAttributes, updateDataAttributes, textAttributes, updateTextAttributes, other

        /// Each name's bytes, matched without making a String of the key.
        static let names = allCases.map { ($0, Array($0.rawValue.utf8)) }
    }

    mutating func key() throws -> Key {
        let raw = try reader.take(try reader.length())
        return Key.names.first { $0.1.count == raw.count && $0.1.elementsEqual(raw) }?.0 ?? .other
    }

    mutating func mapCount() throws -> Int {
        guard try reader.byte() == WireValue.Tag.map.rawValue else { throw NotFastForm() }
        return try reader.count()
    }

    mutating func string() throws -> String {
        guard try reader.byte() == WireValue.Tag.string.rawValue else { throw NotFastForm() }
        return try reader.text()
    }

    mutating func bool() throws -> Bool {
        switch try reader.byte() {
        case WireValue.Tag.true.rawValue: return true
        case WireValue.Tag.false.rawValue: return false
        default: throw NotFastForm()
        }
    }

    mutating func int32() throws -> Int32 {
        let tag = try reader.byte()
        let raw = try reader.varint()
        let number: Int32?
        switch tag {
        case WireValue.Tag.int.rawValue: number = Int32(exactly: WireValue.Reader.unzigzag(raw))
        case WireValue.Tag.unsigned.rawValue: number = Int32(exactly: raw)
        default: number = nil
        }
        guard let number else { throw NotFastForm() }
        return number
    }

    /// A map of text to text; a key's first entry wins.
    mutating func strings() throws -> [String: String] {
        let count = try mapCount()
        // Not reserveCapacity: on an empty dictionary it runs unspecialized, and copies.
        var result = [String: String](minimumCapacity: count)
        for _ in 0..<count {
            let key = try reader.text()
            let value = try string()
            if result[key] == nil { result[key] = value }
        }
        return result
    }

    /// An optional field read as decodeIfPresent does: null is nil (absent is left to
    /// the caller); a value of another kind is no fast form.
    mutating func nullOr<T>(_ read: (inout FieldReader) throws -> T) throws -> T? {
        if reader.offset < reader.bytes.count && reader.bytes[reader.offset] == WireValue.Tag.null.rawValue {
            reader.offset += 1
            return nil
        }
        return try read(&self)
    }

    mutating func optionalString() throws -> String? { try nullOr { try $0.string() } }

    mutating func optionalData() throws -> Data? {
        try nullOr { field in
            guard try field.reader.byte() == WireValue.Tag.bytes.rawValue else { throw NotFastForm() }
            return Data(try field.reader.take(try field.reader.length()))
        }
    }

    /// Passes over one value of any kind, as a reader passes over a field it does not know.
    mutating func skip() throws { try reader.skip(depth: 1) }
}
