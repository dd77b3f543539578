// An app socket holds at most its share of the daemon's descriptors in connections,
// all app sockets together a larger one; a refusal is logged once per spell, and a
// closed connection's place is free again (starvation.sh replays it on a daemon).
@testable import Control
import Testing

@Suite struct AppConnectionLimitTests {
    /// Under a descriptor limit of 80: 10 per socket, 20 in all.
    private static let limit = 80

    @Test func theCapsStayFarBelowTheDescriptorLimit() {
        #expect(AppConnectionLimit.caps(descriptorLimit: 80) == (10, 20))
        #expect(AppConnectionLimit.caps(descriptorLimit: 1024) == (128, 256))
        #expect(AppConnectionLimit.caps(descriptorLimit: 1 << 20) == (256, 1024))
    }

    @Test func aSocketTakesItsShareAndNoMore() throws {
        let socket = AppConnectionLimit().socket(of: "com.example.app")
        var places = Self.admitted(socket, times: 12)
        #expect(places.count == 10)

        guard case .refused(let reply, let line) = socket.admit(descriptorLimit: Self.limit) else {
            Issue.record("an eleventh connection was admitted")
            return
        }
        #expect(reply.contains("com.example.app has 10 connections open"), "\(reply)")
        #expect(line == nil, "the spell's first refusal (the twelfth above) was the one to log")

        places.removeLast().giveBack()
        #expect(Self.admitted(socket, times: 1).count == 1, "a closed connection's place is free again")
        guard case .refused(_, let again?) = socket.admit(descriptorLimit: Self.limit) else {
            Issue.record("a new spell of refusals was not logged")
            return
        }
        #expect(again.contains("as many as one app may"), "\(again)")
    }

    @Test func theFirstRefusalOfASpellIsLogged() {
        let socket = AppConnectionLimit().socket(of: "com.example.app")
        _ = Self.admitted(socket, times: 10)
        var lines: [String] = []
        for _ in 0..<5 {
            if case .refused(_, let line?) = socket.admit(descriptorLimit: Self.limit) { lines.append(line) }
        }
        #expect(lines.count == 1 && lines[0].contains("80 descriptors"), "\(lines)")
    }

    @Test func allSocketsTogetherTakeTheirShareAndNoMore() {
        let limit = AppConnectionLimit()
        let first = limit.socket(of: "com.example.one")
        let second = limit.socket(of: "com.example.two")
        let third = limit.socket(of: "com.example.three")
        let held = Self.admitted(first, times: 10) + Self.admitted(second, times: 10)
        #expect(held.count == 20)
        guard case .refused(let reply, _) = third.admit(descriptorLimit: Self.limit) else {
            Issue.record("a twenty-first app connection was admitted")
            return
        }
        #expect(reply.contains("the apps have 20 connections open"), "\(reply)")
        held[0].giveBack()
        #expect(Self.admitted(third, times: 1).count == 1)
    }

    @Test func aPlaceIsGivenBackOnce() {
        let socket = AppConnectionLimit().socket(of: "com.example.app")
        var places = Self.admitted(socket, times: 10)
        let place = places.removeLast()
        place.giveBack()
        place.giveBack()  // a second close of the same connection frees nothing more
        #expect(Self.admitted(socket, times: 2).count == 1)
    }

    private static func admitted(_ socket: AppSocketConnections, times: Int) -> [AppConnectionPlace] {
        (0..<times).compactMap { _ in
            if case .admitted(let place) = socket.admit(descriptorLimit: limit) { return place }
            return nil
        }
    }
}
