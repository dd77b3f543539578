// The keychain call's request and reply, the messages an app sends most, built to and
// read from their WireValue directly: the same values the Codable conformances give
// (field by field, in declaration order, an absent optional left out), without the
// containers, coding paths and generic metadata lookups that made up most of a call's
// coding. Any other message or shape (a reply with a device status, a field of an
// unexpected kind…) goes through Codable, which also reports every error: `nil` here means
// "not this fast form", never "malformed".
import Foundation

enum KeychainWireForm {
    // MARK: Writing

    static func value(of request: ControlRequest) -> WireValue? {
        guard case .keychain(let keychain) = request else { return nil }
        return .map([("keychain", .map([("_0", value(of: keychain))]))])
    }

    static func value(of request: KeychainRequest) -> WireValue {
        var fields: [(key: String, value: WireValue)] = [("operation", .string(request.operation.rawValue))]
        fields.reserveCapacity(8)
        if let app = request.app { fields.append(("app", .string(app))) }
        fields.append(("attributes", strings(request.attributes)))
        if let data = request.data { fields.append(("data", .bytes([UInt8](data)))) }
        fields.append(("updateAttributes", strings(request.updateAttributes)))
        if let newData = request.newData { fields.append(("newData", .bytes([UInt8](newData)))) }
        if let limit = request.limit { fields.append(("limit", .string(limit))) }
        if let returning = request.returning { fields.append(("returning", .string(returning))) }
        if let authentication = request.authentication { fields.append(("authentication", value(of: authentication))) }
        return .map(fields)
    }

    static func value(of authentication: KeychainAuthentication) -> WireValue {
        var fields: [(key: String, value: WireValue)] = [("interaction", .string(authentication.interaction.rawValue))]
        if let prompt = authentication.prompt { fields.append(("prompt", .string(prompt))) }
        if let context = authentication.context { fields.append(("context", .string(context))) }
        return .map(fields)
    }

    static func value(of reply: ControlReply) -> WireValue? {
        guard reply.status == nil, reply.event == nil, reply.app == nil, reply.socket == nil, reply.failure == nil,
              reply.biometry == nil, reply.key == nil, reply.entitlements == nil, reply.sandboxApp == nil,
              reply.sync == nil else { return nil }
        var fields: [(key: String, value: WireValue)] = [("ok", .bool(reply.ok))]
        if let error = reply.error { fields.append(("error", .string(error))) }
        if let message = reply.message { fields.append(("message", .string(message))) }
        if let keychain = reply.keychain { fields.append(("keychain", value(of: keychain))) }
        return .map(fields)
    }

    static func value(of response: KeychainResponse) -> WireValue {
        let items: [WireValue] = response.items.map { item in
            var fields: [(key: String, value: WireValue)] = []
            if let attributes = item.attributes { fields.append(("attributes", strings(attributes))) }
            if let data = item.data { fields.append(("data", .bytes([UInt8](data)))) }
            return .map(fields)
        }
        var fields: [(key: String, value: WireValue)] = [("status", .int(Int64(response.status))), ("items", .list(items))]
        if let message = response.message { fields.append(("message", .string(message))) }
        return .map(fields)
    }

    private static func strings(_ dictionary: [String: String]) -> WireValue {
        .map(dictionary.map { ($0.key, .string($0.value)) })
    }

    // MARK: Reading

    static func request(from value: WireValue) -> ControlRequest? {
        guard case .map(let outer) = value, outer.count == 1, outer[0].key == "keychain",
              case .map(let payload) = outer[0].value,
              let fields = first(payload)["_0"], let keychain = keychainRequest(from: fields) else { return nil }
        return .keychain(keychain)
    }

    static func keychainRequest(from value: WireValue) -> KeychainRequest? {
        guard case .map(let entries) = value else { return nil }
        let fields = first(entries)
        guard case .string(let name)? = fields["operation"], let operation = KeychainRequest.Operation(rawValue: name),
              let attributes = strings(fields["attributes"]), let updateAttributes = strings(fields["updateAttributes"]),
              let app = optionalString(fields["app"]), let limit = optionalString(fields["limit"]),
              let returning = optionalString(fields["returning"]),
              let data = optionalData(fields["data"]), let newData = optionalData(fields["newData"]) else { return nil }
        var request = KeychainRequest(operation: operation, app: app.value, attributes: attributes, data: data.value,
                                      updateAttributes: updateAttributes, newData: newData.value,
                                      limit: limit.value, returning: returning.value)
        if let value = fields["authentication"], value != .null {
            guard let asked = authentication(from: value) else { return nil }
            request.authentication = asked
        }
        return request
    }

    static func authentication(from value: WireValue) -> KeychainAuthentication? {
        guard case .map(let entries) = value else { return nil }
        let fields = first(entries)
        guard case .string(let name)? = fields["interaction"],
              let interaction = KeychainAuthentication.Interaction(rawValue: name),
              let prompt = optionalString(fields["prompt"]), let context = optionalString(fields["context"]) else { return nil }
        return KeychainAuthentication(interaction: interaction, prompt: prompt.value, context: context.value)
    }

    static func reply(from value: WireValue) -> ControlReply? {
        guard case .map(let entries) = value,
              entries.allSatisfy({ ["ok", "error", "message", "keychain"].contains($0.key) }) else { return nil }
        let fields = first(entries)
        guard case .bool(let ok)? = fields["ok"], let error = optionalString(fields["error"]),
              let message = optionalString(fields["message"]) else { return nil }
        var keychain: KeychainResponse?
        if let value = fields["keychain"], value != .null {
            guard let response = keychainResponse(from: value) else { return nil }
            keychain = response
        }
        return ControlReply(ok: ok, error: error.value, message: message.value, keychain: keychain)
    }

    static func keychainResponse(from value: WireValue) -> KeychainResponse? {
        guard case .map(let entries) = value else { return nil }
        let fields = first(entries)
        guard let status = int32(fields["status"]), case .list(let listed)? = fields["items"],
              let message = optionalString(fields["message"]) else { return nil }
        var items: [KeychainResponse.Item] = []
        items.reserveCapacity(listed.count)
        for entry in listed {
            guard case .map(let itemEntries) = entry else { return nil }
            let itemFields = first(itemEntries)
            guard let data = optionalData(itemFields["data"]) else { return nil }
            var attributes: [String: String]?
            if let value = itemFields["attributes"], value != .null {
                guard let decoded = strings(value) else { return nil }
                attributes = decoded
            }
            items.append(KeychainResponse.Item(attributes: attributes, data: data.value))
        }
        return KeychainResponse(status: status, items: items, message: message.value)
    }

    /// Each key's first entry, as the Codable reader takes it. Messages have a handful
    /// of fields: a linear list beats hashing.
    private static func first(_ entries: [(key: String, value: WireValue)]) -> Fields { Fields(entries: entries) }

    struct Fields {
        let entries: [(key: String, value: WireValue)]
        subscript(key: String) -> WireValue? { entries.first { $0.key == key }?.value }
    }

    /// A [String: String] as the Codable reader makes it: first entry of a key wins.
    private static func strings(_ value: WireValue?) -> [String: String]? {
        guard case .map(let entries)? = value else { return nil }
        var result: [String: String] = [:]
        result.reserveCapacity(entries.count)
        for entry in entries where result[entry.key] == nil {
            guard case .string(let text) = entry.value else { return nil }
            result[entry.key] = text
        }
        return result
    }

    /// An optional field read as decodeIfPresent does: absent or null is nil; a value
    /// of another kind is no fast form (Codable then reports it).
    private struct Present<T> { let value: T? }

    private static func optionalString(_ value: WireValue?) -> Present<String>? {
        switch value {
        case nil, .null?: return Present(value: nil)
        case .string(let text)?: return Present(value: text)
        default: return nil
        }
    }

    private static func optionalData(_ value: WireValue?) -> Present<Data>? {
        switch value {
        case nil, .null?: return Present(value: nil)
        case .bytes(let bytes)?: return Present(value: Data(bytes))
        default: return nil
        }
    }

    private static func int32(_ value: WireValue?) -> Int32? {
        switch value {
        case .int(let number)?: return Int32(exactly: number)
        case .unsigned(let number)?: return Int32(exactly: number)
        default: return nil
        }
    }
}
