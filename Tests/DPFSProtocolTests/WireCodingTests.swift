// The control protocol's body: every message comes back as it was sent, numbers keep
// their range, and a malformed or hostile body is an error, never a crash or a hang.
@testable import DPFSProtocol
import Foundation
import Testing

@Suite struct WireCodingTests {
    func roundTrip<T: Codable>(_ value: T) throws -> T {
        try ControlCoding.decode(T.self, ControlCoding.encode(value))
    }

    @Test func keychainRequestRoundTrips() throws {
        let request = KeychainRequest(operation: .update, app: "com.example.app",
                                      attributes: ["class": "genp", "service": "bänk ✓", "account": ""],
                                      data: Data([0, 1, 255]), updateAttributes: ["label": "new"],
                                      newData: Data(), limit: "all", returning: "both")
        guard case .keychain(let back) = try roundTrip(ControlRequest.keychain(request)) else {
            Issue.record("not a keychain request")
            return
        }
        #expect(back.operation == .update)
        #expect(back.app == "com.example.app")
        #expect(back.attributes == request.attributes)
        #expect(back.updateAttributes == ["label": "new"])
        #expect(back.data == Data([0, 1, 255]))
        #expect(back.newData == Data())
        #expect(back.limit == "all" && back.returning == "both")
    }

    /// Attributes given as bytes keep their bytes and their map, both ways.
    @Test func bytesAttributesRoundTrip() throws {
        var request = KeychainRequest(operation: .update, attributes: ["class": "genp", "service": "s"],
                                      updateAttributes: ["label": "l"])
        request.dataAttributes = ["account": Data([0xff, 0, 0x6b])]
        request.updateDataAttributes = ["service": Data()]
        guard case .keychain(let back) = try roundTrip(ControlRequest.keychain(request)) else {
            Issue.record("not a keychain request")
            return
        }
        #expect(back.attributes == request.attributes)
        #expect(back.dataAttributes == ["account": Data([0xff, 0, 0x6b])])
        #expect(back.updateDataAttributes == ["service": Data()])
        let item = KeychainResponse.Item(attributes: ["service": "s"], dataAttributes: ["account": Data([0xfe])])
        let reply = try roundTrip(ControlReply(ok: true, keychain: KeychainResponse(status: 0, items: [item])))
        #expect(reply.keychain?.items.first?.dataAttributes == ["account": Data([0xfe])])
        #expect(reply.keychain?.items.first?.attributes == ["service": "s"])
    }

    /// A generic given as text keeps its map, both ways.
    @Test func textAttributesRoundTrip() throws {
        var request = KeychainRequest(operation: .update, attributes: ["class": "genp"], updateAttributes: [:])
        request.textAttributes = ["generic": "g"]
        request.updateTextAttributes = ["generic": ""]
        guard case .keychain(let back) = try roundTrip(ControlRequest.keychain(request)) else {
            Issue.record("not a keychain request")
            return
        }
        #expect(back.textAttributes == ["generic": "g"])
        #expect(back.updateTextAttributes == ["generic": ""])
        let item = KeychainResponse.Item(attributes: ["service": "s"], textAttributes: ["generic": "ü"])
        let reply = try roundTrip(ControlReply(ok: true, keychain: KeychainResponse(status: 0, items: [item])))
        #expect(reply.keychain?.items.first?.textAttributes == ["generic": "ü"])
    }

    @Test func everyRequestKeepsItsCase() throws {
        let requests: [ControlRequest] = [
            .status, .lock(now: true), .unlock, .restart, .passcode(.change), .events,
            .appAdd(entitlements: Data("plist".utf8)), .appIdentity(bundleID: nil),
            .appSession(bundleID: "com.evil.widget", deviceControl: false),
        ]
        for request in requests {
            #expect(String(describing: try roundTrip(request)) == String(describing: request))
        }
    }

    @Test func keyRequestAndReplyRoundTrip() throws {
        let request = KeyRequest(operation: .sign, app: "com.example.app", attributes: ["applicationTag": "ab"],
                                 permanent: true, token: Data([1, 2, 3]),
                                 algorithm: "algid:sign:ECDSA:message-X962:SHA256", input: Data("challenge".utf8),
                                 authentication: KeychainAuthentication(interaction: .fail, prompt: "Approve",
                                                                        context: String(repeating: "a", count: 32)))
        guard case .secKey(let back) = try roundTrip(ControlRequest.secKey(request)) else {
            Issue.record("not a key request")
            return
        }
        #expect(back.operation == .sign && back.app == "com.example.app" && back.permanent)
        #expect(back.attributes == ["applicationTag": "ab"] && back.token == Data([1, 2, 3]))
        #expect(back.algorithm == request.algorithm && back.input == request.input)
        #expect(back.authentication == request.authentication)

        var reply = ControlReply(ok: false)
        reply.key = KeyResponse(status: -25308, publicKey: Data(repeating: 4, count: 65), output: Data([9]),
                                message: "locked")
        let answer = try roundTrip(reply)
        #expect(answer.key?.status == -25308 && answer.key?.publicKey?.count == 65)
        #expect(answer.key?.output == Data([9]) && answer.key?.token == nil && answer.key?.message == "locked")
    }

    @Test func replyWithStatusAndItemsRoundTrips() throws {
        let status = DeviceStatus(state: .locked, classes: ["complete": false, "none": true], passcodeSet: true,
                                  failedAttempts: 3, retryAfter: 60.5, erased: false, gracePeriod: 10,
                                  defaultProtection: "untilFirstAuth", deviceDirectory: "/d", pid: Int32.max,
                                  secretStore: nil, inodes: Int.max)
        var reply = ControlReply(ok: true, status: status,
                                 keychain: KeychainResponse(status: -25308, items: [.init(attributes: ["a": "b"], data: Data([7]))]))
        reply.socket = "/run/s"
        let back = try roundTrip(reply)
        #expect(back.ok && back.error == nil && back.socket == "/run/s" && back.app == nil)
        #expect(back.status?.classes == ["complete": false, "none": true])
        #expect(back.status?.retryAfter == 60.5 && back.status?.secretStore == nil)
        #expect(back.status?.pid == Int32.max && back.status?.inodes == Int.max)
        #expect(back.keychain?.status == -25308)
        #expect(back.keychain?.items.first?.data == Data([7]))
    }

    @Test func integersKeepTheirRangeAndSign() throws {
        for value: Int64 in [0, 1, -1, 63, -64, 64, Int64.max, Int64.min] {
            #expect(try WireValue(parsing: WireValue.int(value).serialized()) == .int(value))
        }
        #expect(try WireValue(parsing: WireValue.unsigned(UInt64.max).serialized()) == .unsigned(UInt64.max))
        // A value that does not fit the field's type is refused, not truncated.
        #expect(throws: DecodingError.self) {
            try WireDecoder.decode(Int8.self, from: WireValue.int(300).serialized())
        }
    }

    @Test func malformedBodiesAreErrors() {
        let bodies: [[UInt8]] = [
            [],                                     // nothing
            [0x7b],                                 // an unknown tag
            [0x06, 0x05, 0x61],                     // text cut short
            [0x06, 0x02, 0xff, 0xfe],               // text that is not UTF-8
            [0x09] + [0xff, 0xff, 0xff, 0xff, 0x0f],  // a count beyond the message
            [0x03] + [UInt8](repeating: 0xff, count: 11),  // an endless varint
            [UInt8](repeating: 0x08, count: 2) + [0x01] + [0x00],  // a list, then a stray byte
            [0x00, 0x00],                           // bytes after the message
        ]
        for body in bodies {
            #expect(throws: (any Error).self) { try WireValue(parsing: body) }
        }
    }

    @Test func deepNestingIsRefused() {
        let deep = [UInt8]((0..<1000).flatMap { _ in [0x08, 0x01] as [UInt8] }) + [0x00]
        #expect(throws: FrameError.self) { try WireValue(parsing: deep) }
    }

    @Test func theWrongShapeIsADecodingError() throws {
        let body = WireValue.map([("lock", .map([("now", .string("yes"))]))]).serialized()
        #expect(throws: DecodingError.self) { try ControlCoding.decode(ControlRequest.self, body) }
        let unknown = WireValue.map([("fly", .map([]))]).serialized()
        #expect(throws: DecodingError.self) { try ControlCoding.decode(ControlRequest.self, unknown) }
    }

    @Test func aLargeAttributeMapDecodes() throws {
        // As many attributes as a request may hold, well beyond what any real one has.
        var attributes: [String: String] = [:]
        for index in 0..<WireValue.Limits.request.entries { attributes["key\(index)"] = "value\(index)" }
        let request = KeychainRequest(operation: .find, attributes: attributes)
        guard case .keychain(let back) = try roundTrip(ControlRequest.keychain(request)) else {
            Issue.record("not a keychain request")
            return
        }
        #expect(back.attributes == attributes)
        // And through Codable, which indexes a large map's keys.
        let body = try WireEncoder.encode(ControlRequest.keychainImport(attributes: attributes))
        guard case .keychainImport(let imported) = try ControlCoding.decode(ControlRequest.self, body) else {
            Issue.record("not an import")
            return
        }
        #expect(imported == attributes)
    }

    /// A body of 16 MB that is one map of eight million empty entries cost the daemon
    /// seconds of CPU and a gigabyte to decode, an element built per two bytes. A
    /// request holds no collection that large: it is refused on its count, at once.
    @Test func aHugeCollectionInARequestIsRefusedOnItsCount() throws {
        let count = 8_388_605
        var body: [UInt8] = [0x09]
        var rest = count
        while rest >= 0x80 { body.append(UInt8(rest & 0x7f) | 0x80); rest >>= 7 }
        body.append(UInt8(rest))
        body += [UInt8](repeating: 0, count: 2 * count)
        let started = ContinuousClock.now
        #expect(throws: FrameError.self) { try ControlCoding.decode(ControlRequest.self, body) }
        #expect(ContinuousClock.now - started < .milliseconds(500))
        // The same refusal on the keychain call's direct path, for a map inside one.
        let attributes = WireValue.map((0...WireValue.Limits.request.entries).map { ("k\($0)", .string("")) })
        let keychain = WireValue.map([("keychain", .map([("_0", .map([
            ("operation", .string("find")), ("attributes", attributes), ("updateAttributes", .map([])),
        ]))]))]).serialized()
        #expect(throws: FrameError.self) { try ControlCoding.decode(ControlRequest.self, keychain) }
    }

    /// Collections each within the count, nested, can still hold millions of values in
    /// a 16 MB body: a request's values are counted in all too.
    @Test func tooManyValuesInAllAreRefused() throws {
        let inner = WireValue.list(Array(repeating: .null, count: 200))
        let body = WireValue.map([("lock", .list(Array(repeating: inner, count: 200)))]).serialized()
        #expect(throws: FrameError.self) { try ControlCoding.decode(ControlRequest.self, body) }
        // Skipped by the keychain call's direct reader, as a field it does not know.
        let skipped = WireValue.map([("keychain", .map([("_0", .map([
            ("operation", .string("find")), ("attributes", .map([])), ("updateAttributes", .map([])),
            ("future", .list(Array(repeating: inner, count: 200))),
        ]))]))]).serialized()
        #expect(throws: FrameError.self) { try ControlCoding.decode(ControlRequest.self, skipped) }
    }

    /// Replies come from the daemon, and a find may return thousands of items.
    @Test func aReplyMayHoldManyItems() throws {
        let items = (0..<5000).map { KeychainResponse.Item(attributes: ["service": "s\($0)", "account": "a"], data: Data([1])) }
        let reply = ControlReply(ok: true, keychain: KeychainResponse(status: 0, items: items))
        #expect(try roundTrip(reply).keychain?.items.count == 5000)
        #expect(try WireDecoder.decode(ControlReply.self, from: WireEncoder.encode(reply)).keychain?.items.count == 5000)
    }

    /// What an item adds to a keychain reply is known before the reply is written, so
    /// that the store can stop collecting items once a reply would not fit a frame.
    @Test func anItemsReplySizeIsExact() throws {
        let items: [KeychainResponse.Item] = [
            .init(), .init(data: Data()), .init(attributes: [:]),
            .init(attributes: ["label": String(repeating: "ü", count: 100), "service": "s"], data: Data(count: 300)),
            .init(attributes: (0..<40).reduce(into: [:]) { $0["k\($1)"] = String(repeating: "v", count: $1 * 10) },
                  data: Data(count: 70_000)),
            .init(attributes: ["service": "s"], dataAttributes: ["account": Data([0xff, 0]), "path": Data(count: 200)]),
            .init(dataAttributes: [:], data: Data([1])),
            .init(attributes: ["service": "s"], dataAttributes: ["label": Data([1])], textAttributes: ["generic": "ü"]),
        ]
        for item in items {
            let empty = try ControlCoding.encode(ControlReply(ok: true, keychain: KeychainResponse(status: 0)))
            let one = try ControlCoding.encode(ControlReply(ok: true, keychain: KeychainResponse(status: 0, items: [item])))
            #expect(one.count - empty.count == item.replySize)
        }
    }
}

/// The keychain call's direct path (KeychainWireForm) against Codable: the same bytes
/// out, the same message back, and whatever it does not cover still decodes or fails
/// exactly as through Codable.
@Suite struct KeychainWireFormTests {
    static let requests: [KeychainRequest] = {
        var withContext = KeychainRequest(operation: .find, attributes: ["class": "genp", "service": "s"], returning: "both")
        withContext.authentication = KeychainAuthentication(interaction: .skip, prompt: "Read ✓",
                                                           context: String(repeating: "b", count: 32))
        return [
            KeychainRequest(operation: .find, attributes: ["class": "genp", "service": "one", "account": "0-1"],
                            returning: "data"),
            KeychainRequest(operation: .update, app: "com.example.app", attributes: ["class": "inet", "port": "443"],
                            data: nil, updateAttributes: ["label": "new"], newData: Data([0, 255]),
                            limit: "all", returning: nil),
            KeychainRequest(operation: .add, attributes: [:], data: Data()),
            withContext,
        ]
    }()

    static let replies: [ControlReply] = [
        ControlReply(ok: true, keychain: KeychainResponse(status: 0, items: [.init(data: Data("secret".utf8))])),
        ControlReply(ok: true, keychain: KeychainResponse(status: 0, items: [
            .init(attributes: ["service": "s", "account": "a"], data: Data([1])), .init(), .init(attributes: [:]),
        ])),
        ControlReply(ok: false, keychain: KeychainResponse(status: -25300, message: "no such item")),
        ControlReply.failure("malformed request: not a valid dpfs control message"),
        ControlReply(ok: true, message: "subscribed"),
    ]

    @Test func requestsAreTheBytesCodableMakes() throws {
        for request in Self.requests {
            let message = ControlRequest.keychain(request)
            let direct = try ControlCoding.encode(message)
            #expect(direct == (try WireEncoder.encode(message)))
            guard case .keychain(let back) = try ControlCoding.decode(ControlRequest.self, direct) else {
                Issue.record("not a keychain request")
                continue
            }
            // Not compared as bytes: a dictionary's order differs from one instance to the next.
            #expect(Self.same(back, request))
        }
    }

    @Test func repliesAreTheBytesCodableMakes() throws {
        for reply in Self.replies {
            let direct = try ControlCoding.encode(reply)
            #expect(direct == (try WireEncoder.encode(reply)))
            #expect(Self.same(try ControlCoding.decode(ControlReply.self, direct), reply))
        }
    }

    /// Bodies a Codable writer could make that the direct writer never does: fields out
    /// of order, nulls for absent optionals, fields no message has, a key twice, an
    /// unsigned status. The direct reader gives what Codable gives.
    @Test func bodiesInAnyFormReadAsThroughCodable() throws {
        let keychain = { (fields: [(key: String, value: WireValue)]) in
            WireValue.map([("keychain", .map([("other", .int(1)), ("_0", .map(fields))]))]).serialized()
        }
        let requests = [
            keychain([("returning", .string("data")), ("updateAttributes", .map([])), ("operation", .string("find")),
                      ("attributes", .map([("service", .string("s")), ("service", .string("later"))]))]),
            keychain([("operation", .string("add")), ("app", .null), ("attributes", .map([])), ("data", .bytes([9])),
                      ("updateAttributes", .map([])), ("newData", .null), ("authentication", .null), ("future", .list([]))]),
            keychain([("operation", .string("delete")), ("attributes", .map([])), ("updateAttributes", .map([])),
                      ("authentication", .map([("context", .null), ("interaction", .string("fail")), ("prompt", .string("p"))])),
                      ("operation", .string("add"))]),
        ]
        for body in requests {
            guard case .keychain(let direct) = try ControlCoding.decode(ControlRequest.self, body),
                  case .keychain(let codable) = try WireDecoder.decode(ControlRequest.self, from: body) else {
                Issue.record("not a keychain request")
                continue
            }
            #expect(Self.same(direct, codable))
            #expect(KeychainWireForm.request(from: body) != nil, "the direct reader left it to Codable")
        }
        let replies = [
            WireValue.map([("keychain", .map([("items", .list([.map([("data", .null), ("attributes", .map([]))])])),
                                              ("status", .unsigned(0)), ("message", .null)])),
                           ("ok", .bool(true)), ("error", .null)]),
            WireValue.map([("ok", .bool(false)), ("ok", .bool(true)), ("keychain", .null), ("message", .string("m"))]),
        ].map { $0.serialized() }
        for body in replies {
            #expect(Self.same(try ControlCoding.decode(ControlReply.self, body), try WireDecoder.decode(ControlReply.self, from: body)))
            #expect(KeychainWireForm.reply(from: body) != nil, "the direct reader left it to Codable")
        }
    }

    static func same(_ a: KeychainRequest, _ b: KeychainRequest) -> Bool {
        a.operation == b.operation && a.app == b.app && a.attributes == b.attributes
            && a.updateAttributes == b.updateAttributes && a.data == b.data && a.newData == b.newData
            && a.limit == b.limit && a.returning == b.returning && a.authentication == b.authentication
    }

    static func same(_ a: ControlReply, _ b: ControlReply) -> Bool {
        a.ok == b.ok && a.error == b.error && a.message == b.message
            && a.keychain?.status == b.keychain?.status && a.keychain?.message == b.keychain?.message
            && a.keychain?.items.map(\.attributes) == b.keychain?.items.map(\.attributes)
            && a.keychain?.items.map(\.data) == b.keychain?.items.map(\.data)
    }

    @Test func otherShapesTakeCodable() throws {
        // A reply with a status, and a keychain reply with an extra field of another message.
        var reply = ControlReply(ok: true, keychain: KeychainResponse(status: 0))
        reply.app = "com.example.app"
        let back = try ControlCoding.decode(ControlReply.self, ControlCoding.encode(reply))
        #expect(back.app == "com.example.app" && back.keychain?.status == 0)
        // A field the messages do not have is ignored, as Codable ignores it.
        let extra = WireValue.map([("ok", .bool(true)), ("future", .int(1))]).serialized()
        #expect(try ControlCoding.decode(ControlReply.self, extra).ok)
    }

    @Test func wrongKindsStillFailAsThroughCodable() throws {
        let request = { (fields: [(key: String, value: WireValue)]) in
            WireValue.map([("keychain", .map([("_0", .map(fields))]))]).serialized()
        }
        let base: [(key: String, value: WireValue)] = [("operation", .string("find")), ("attributes", .map([])),
                                                       ("updateAttributes", .map([]))]
        #expect(throws: DecodingError.self) { try ControlCoding.decode(ControlRequest.self, request([("operation", .string("fly"))] + base.dropFirst())) }
        #expect(throws: DecodingError.self) { try ControlCoding.decode(ControlRequest.self, request(base + [("data", .string("x"))])) }
        #expect(throws: DecodingError.self) { try ControlCoding.decode(ControlRequest.self, request(Array(base.dropLast()))) }
        #expect(throws: DecodingError.self) {
            try ControlCoding.decode(ControlRequest.self, request(base + [("authentication", .map([("interaction", .string("ask"))]))]))
        }
        let badStatus = WireValue.map([("ok", .bool(true)), ("keychain", .map([("status", .int(1 << 40)), ("items", .list([]))]))])
        #expect(throws: DecodingError.self) { try ControlCoding.decode(ControlReply.self, badStatus.serialized()) }
        // The first entry of a key wins, on both paths.
        let twice = request(base + [("app", .string("first")), ("app", .string("second"))])
        guard case .keychain(let decoded) = try ControlCoding.decode(ControlRequest.self, twice) else {
            Issue.record("not a keychain request")
            return
        }
        #expect(decoded.app == "first")
    }
}
