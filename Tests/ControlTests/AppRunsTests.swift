// The processes holding app sessions, as the owner's status lists them for `dpfs
// unmount`: one per connection, gone with its connection, and across the wire whole;
// none opens while an unmount that found none goes on.
@testable import Control
import DPFSProtocol
import Testing

@Suite struct AppRunsTests {
    @Test func oneRunPerConnectionGoneWithIt() {
        let runs = AppRuns()
        #expect(runs.current().isEmpty)
        #expect(runs.admit(AppRun(pid: 300, app: "com.example.app"), connection: 7) == .first)
        #expect(runs.admit(AppRun(pid: 200, app: "com.example.other"), connection: 8) == .first)
        #expect(runs.admit(AppRun(pid: 300, app: "com.example.other"), connection: 7) == .again)
        #expect(runs.current() == [AppRun(pid: 200, app: "com.example.other"), AppRun(pid: 300, app: "com.example.app")])
        runs.remove(connection: 7)
        #expect(runs.current() == [AppRun(pid: 200, app: "com.example.other")])
        runs.remove(connection: 8)
        #expect(runs.current().isEmpty)
    }

    @Test func anUnmountThatFoundNoneHoldsSessionsShutUntilItEnds() {
        let runs = AppRuns()
        #expect(runs.admit(AppRun(pid: 300, app: "com.example.app"), connection: 7) == .first)
        #expect(runs.beginUnmount() == [AppRun(pid: 300, app: "com.example.app")])
        #expect(runs.admit(AppRun(pid: 200, app: "com.example.app"), connection: 8) == .first,
                "an unmount refused for a run holds nothing shut")
        runs.remove(connection: 7)
        runs.remove(connection: 8)
        #expect(runs.beginUnmount().isEmpty)
        #expect(runs.admit(AppRun(pid: 400, app: "com.example.app"), connection: 9) == .refused)
        #expect(runs.current().isEmpty, "a refused session is no run")
        #expect(runs.beginUnmount().isEmpty, "a second unmount")
        runs.endUnmount()
        #expect(runs.admit(AppRun(pid: 400, app: "com.example.app"), connection: 9) == .refused,
                "while the first goes on")
        runs.endUnmount()
        #expect(runs.admit(AppRun(pid: 400, app: "com.example.app"), connection: 9) == .first)
    }

    @Test func theSessionNamesItsApp() {
        let runs = AppRuns()
        #expect(runs.admit(AppRun(pid: 300, app: "the sandbox's app"), connection: 7) == .first)
        runs.name("com.example.app", connection: 7)
        #expect(runs.current() == [AppRun(pid: 300, app: "com.example.app")])
    }

    @Test func theStatusReplyCarriesThemWhole() throws {
        var reply = ControlReply(ok: true)
        reply.runs = [AppRun(pid: 12, app: "com.example.app"), AppRun(pid: 34, app: "org.demo.ünïcode")]
        let back = try ControlCoding.decode(ControlReply.self, ControlCoding.encode(reply))
        #expect(back.runs == reply.runs)
        #expect(try ControlCoding.decode(ControlReply.self, ControlCoding.encode(ControlReply(ok: true))).runs == nil)
    }
}
