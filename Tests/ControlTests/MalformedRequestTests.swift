// A request the daemon cannot decode is told why when it broke a decoding limit (as
// many entries as a request may hold, in one list or map and in all); one of no
// request's shape gets the general answer, which quotes none of its values.
@testable import Control
import DPFSProtocol
import Testing

@Suite struct MalformedRequestTests {
    @Test func aMapOverTheEntryLimitIsToldTheLimit() {
        var attributes: [String: String] = [:]
        for index in 0..<300 { attributes["attribute\(index)"] = "value" }
        let message = Self.refusal(of: .keychain(KeychainRequest(operation: .find, attributes: attributes)))
        #expect(message.contains("300 entries") && message.contains("256"), "\(message)")
    }

    @Test func valuesOverTheLimitInAllAreToldTheLimit() {
        // Twenty lists of 250: each within the limit of one, 5,000 in all.
        let list = WireValue.list(Array(repeating: .list(Array(repeating: .null, count: 250)), count: 20))
        let message = Self.refusal(of: WireValue.map([(key: "lock", value: list)]).serialized())
        #expect(message.contains("4096") && message.contains("in all"), "\(message)")
    }

    @Test func aRequestOfNoKnownShapeGetsTheGeneralAnswer() {
        let body = WireValue.map([(key: "lock", value: .map([(key: "now", value: .string("yes, secret"))]))]).serialized()
        let message = Self.refusal(of: body)
        #expect(message == "malformed request: not a valid dpfs control message", "\(message)")
    }

    private static func refusal(of request: ControlRequest) -> String {
        guard let body = try? ControlCoding.encode(request) else { return "not encoded" }
        return refusal(of: body)
    }

    private static func refusal(of body: [UInt8]) -> String {
        do {
            _ = try ControlCoding.decode(ControlRequest.self, body)
            return "decoded"
        } catch {
            return MalformedRequest.message(for: error)
        }
    }
}
