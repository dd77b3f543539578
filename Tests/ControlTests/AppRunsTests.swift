// The processes holding app sessions, as the owner's status lists them for `dpfs
// unmount`: one per connection, gone with its connection, and across the wire whole.
@testable import Control
import DPFSProtocol
import Testing

@Suite struct AppRunsTests {
    @Test func oneRunPerConnectionGoneWithIt() {
        let runs = AppRuns()
        #expect(runs.current().isEmpty)
        runs.add(AppRun(pid: 300, app: "com.example.app"), connection: 7)
        runs.add(AppRun(pid: 200, app: "com.example.other"), connection: 8)
        runs.add(AppRun(pid: 300, app: "com.example.other"), connection: 7)
        #expect(runs.current() == [AppRun(pid: 200, app: "com.example.other"), AppRun(pid: 300, app: "com.example.app")])
        runs.remove(connection: 7)
        #expect(runs.current() == [AppRun(pid: 200, app: "com.example.other")])
        runs.remove(connection: 8)
        #expect(runs.current().isEmpty)
    }

    @Test func theStatusReplyCarriesThemWhole() throws {
        var reply = ControlReply(ok: true)
        reply.runs = [AppRun(pid: 12, app: "com.example.app"), AppRun(pid: 34, app: "org.demo.ünïcode")]
        let back = try ControlCoding.decode(ControlReply.self, ControlCoding.encode(reply))
        #expect(back.runs == reply.runs)
        #expect(try ControlCoding.decode(ControlReply.self, ControlCoding.encode(ControlReply(ok: true))).runs == nil)
    }
}
