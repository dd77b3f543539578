// Requests and replies of the control protocol, as the body of a frame.
import Foundation

public enum PasscodeAction: String, Codable, Sendable { case set, change, remove }

public enum ControlRequest: Codable, Sendable {
    case status
    case lock(now: Bool)
    /// The passcode travels as the frame's first secret.
    case unlock
    case restart
    /// Moves the device's clock forward by `seconds` (> 0).
    case clockAdvance(seconds: Double)
    /// Secrets: [current] for remove, [new] for set, [current, new] for change.
    case passcode(PasscodeAction)
    case events
    /// The item's data (add's data, update's new data), if any, travels as the frame's
    /// only secret rather than in the request's JSON.
    case keychain(KeychainRequest)
    case appAdd(entitlements: Data)
    /// Which registered app a bundle ID names (nil: the sandbox's own); the reply's
    /// `app` is its bundle ID, an unregistered one is an error reply.
    case appIdentity(bundleID: String?)
    /// A socket of its own for one app (nil: the sandbox's own), for `dpfs run`: every
    /// request on it acts as that app (ControlScope). It lives as long as the
    /// connection that asked for it; the reply names it in `socket`.
    case appSession(bundleID: String?, deviceControl: Bool)
    /// The registered apps (the reply's `apps`); on an app's socket, that app alone.
    case appList
    /// The simulated user's biometry (BiometryMessages).
    case biometry(BiometryRequest)
    /// A SecKey call the app cannot answer alone (KeyRequest).
    case secKey(KeyRequest)
    /// Every keychain item that may leave the device, and the registered apps, for
    /// `dpfs backup` (owner only): one reply per app (`app`, `entitlements`), one per
    /// item (`keychain` holding its attributes, its data as the frame's secret), then a
    /// last reply with neither.
    case keychainExport
    /// One exported item into this device, for `dpfs restore` (owner only); its data
    /// travels as the frame's secret.
    case keychainImport(attributes: [String: String])
    /// Keychain sync: create, invite, join, leave, status (the reply's `sync`).
    case sync(SyncCommand)
    /// `dpfs unmount`, before it detaches (owner only): the reply's `runs` lists the
    /// app sessions open; if it lists none, no app session opens until this
    /// connection closes.
    case unmounting
}

public struct ControlReply: Codable, Sendable {
    public var ok: Bool
    public var error: String?
    public var message: String?
    public var status: DeviceStatus?
    public var keychain: KeychainResponse?
    public var event: DeviceEvent?
    /// For appIdentity and appSession: the registered app's bundle ID.
    public var app: String?
    /// For appSession: the app's socket.
    public var socket: String?
    /// Which of the failures scripts tell apart this is, if one (with ok false).
    public var failure: ControlFailure?
    /// For biometry requests: the simulated user's biometry after the request.
    public var biometry: BiometryReply?
    /// For secKey: the key call's answer.
    public var key: KeyResponse?
    /// For keychainExport's app replies: the app's entitlements plist, if it has one,
    /// and whether it is the sandbox's own.
    public var entitlements: Data?
    public var sandboxApp: Bool?
    /// For sync: the device's sync state after the command.
    public var sync: SyncReport?
    /// For appList: the registered apps, the sandbox's own first.
    public var apps: [ListedApp]?
    /// For status, on the owner's socket, and for unmounting: the app sessions open,
    /// one per process.
    public var runs: [AppRun]?

    public init(ok: Bool, error: String? = nil, message: String? = nil, status: DeviceStatus? = nil,
                keychain: KeychainResponse? = nil, event: DeviceEvent? = nil) {
        self.ok = ok; self.error = error; self.message = message
        self.status = status; self.keychain = keychain; self.event = event
    }

    public static func failure(_ text: String, _ kind: ControlFailure? = nil) -> ControlReply {
        var reply = ControlReply(ok: false, error: text)
        reply.failure = kind
        return reply
    }
}

/// How a message becomes a frame's body and back: the wire form of dpfs(5). A keychain
/// call's request and reply take a direct path (KeychainWireForm) to the same bytes;
/// everything else goes through Codable.
public enum ControlCoding {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        if T.self == ControlRequest.self, let request = value as? ControlRequest { return try encode(request) }
        if T.self == ControlReply.self, let reply = value as? ControlReply { return try encode(reply) }
        return try WireEncoder.encode(value)
    }

    /// A request is held to WireValue.Limits.request (a count beyond them is a
    /// FrameError); a reply, the daemon's, only to its frame's size.
    public static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
        if T.self == ControlRequest.self, let request = try decode(ControlRequest.self, bytes) as? T { return request }
        if T.self == ControlReply.self, let reply = try decode(ControlReply.self, bytes) as? T { return reply }
        return try WireDecoder.decode(type, from: bytes)
    }

    // The messages of every call, by their own types: the compiler picks these over the
    // generic forms, which run unspecialized in the modules that call them (the daemon,
    // the Security library), testing the type and casting the value at every call.

    public static func encode(_ request: ControlRequest) throws -> [UInt8] {
        try KeychainWireForm.bytes(of: request) ?? WireEncoder.encode(request)
    }

    public static func encode(_ reply: ControlReply) throws -> [UInt8] {
        try KeychainWireForm.bytes(of: reply) ?? WireEncoder.encode(reply)
    }

    public static func decode(_ type: ControlRequest.Type, _ bytes: [UInt8]) throws -> ControlRequest {
        try KeychainWireForm.request(from: bytes) ?? WireDecoder.decode(type, from: bytes, limits: .request)
    }

    public static func decode(_ type: ControlReply.Type, _ bytes: [UInt8]) throws -> ControlReply {
        try KeychainWireForm.reply(from: bytes) ?? WireDecoder.decode(type, from: bytes)
    }
}
