// Closing the item store: a second close is no second close of the database.
import DPFSProtocol
@testable import ItemStore
import Testing

@Suite struct CloseTests {
    @Test func aSecondCloseDoesNothing() throws {
        let t = try TestDevice()
        #expect(t.add(["service": "s"]).status == 0)
        try t.store.close()
        try t.store.close()
        #expect(t.find(["service": "s"]).status != 0)
    }
}
