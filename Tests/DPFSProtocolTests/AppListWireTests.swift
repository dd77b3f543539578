// The app list's request and reply cross the wire unchanged, and a list of another
// shape is an error, never a partial list.
import DPFSProtocol
import Foundation
import Testing

@Suite struct AppListWireTests {
    func roundTrip<T: Codable>(_ value: T) throws -> T {
        try ControlCoding.decode(T.self, ControlCoding.encode(value))
    }

    static let apps = [
        ListedApp(bundleID: "com.example.app", own: true,
                  accessGroups: ["ABCDE12345.shared", "ABCDE12345.com.example.app", "group.com.example"],
                  teamID: "ABCDE12345", applicationIdentifier: "ABCDE12345.com.example.app",
                  defaultDataProtection: "complete"),
        ListedApp(bundleID: "org.demo.ünïcode", own: false, accessGroups: ["XXXXXXXXXX.org.demo.ünïcode"]),
    ]

    @Test func theRequestKeepsItsCase() throws {
        #expect(String(describing: try roundTrip(ControlRequest.appList)) == String(describing: ControlRequest.appList))
        #expect(try ControlCoding.encode(ControlRequest.appList) == WireValue.map([("appList", .map([]))]).serialized())
    }

    @Test func theReplyKeepsEveryApp() throws {
        var reply = ControlReply(ok: true)
        reply.apps = Self.apps
        #expect(try roundTrip(reply).apps == Self.apps)
        var empty = ControlReply(ok: true)
        empty.apps = []
        #expect(try roundTrip(empty).apps == [])
        #expect(try roundTrip(ControlReply(ok: true)).apps == nil)
    }

    @Test func theStatusNamesTheSandboxApp() throws {
        var status = DeviceStatus(state: .unlocked, classes: ["none": true], passcodeSet: false, failedAttempts: 0,
                                  retryAfter: nil, erased: false, gracePeriod: 10, defaultProtection: "untilFirstAuth",
                                  deviceDirectory: "/d", pid: 1, secretStore: nil, inodes: nil)
        #expect(try roundTrip(ControlReply(ok: true, status: status)).status?.app == nil)
        status.app = "com.example.app"
        #expect(try roundTrip(ControlReply(ok: true, status: status)).status?.app == "com.example.app")
    }

    @Test func malformedRequestsAreRefused() {
        for arguments: WireValue in [.string("all"), .list([]), .null] {
            let body = WireValue.map([("appList", arguments)]).serialized()
            #expect(throws: DecodingError.self) { try ControlCoding.decode(ControlRequest.self, body) }
        }
    }

    @Test func malformedListsAreRefused() {
        let app: [(key: String, value: WireValue)] = [
            ("bundleID", .string("com.example.app")), ("own", .bool(true)), ("accessGroups", .list([.string("T.g")])),
        ]
        let lists: [WireValue] = [
            .map(app),                                                      // one app, not a list
            .list([.map(Array(app.dropFirst()))]),                          // no bundle ID
            .list([.map([app[0], ("own", .string("yes")), app[2]])]),       // own is not a bool
            .list([.map([app[0], app[1], ("accessGroups", .string("T.g"))])]),  // groups not a list
            .list([.map([app[0], app[1], ("accessGroups", .list([.int(1)]))])]),  // a group that is no text
            .list([.map(app), .string("com.other.app")]),                   // an entry that is no app
        ]
        for apps in lists {
            let body = WireValue.map([("ok", .bool(true)), ("apps", apps)]).serialized()
            #expect(throws: DecodingError.self) { try ControlCoding.decode(ControlReply.self, body) }
        }
        let wellFormed = WireValue.map([("ok", .bool(true)), ("apps", .list([.map(app)]))]).serialized()
        #expect((try? ControlCoding.decode(ControlReply.self, wellFormed))?.apps?.first?.own == true)
    }
}
