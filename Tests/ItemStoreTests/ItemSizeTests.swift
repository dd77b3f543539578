// How large an item may be, and how large a find's reply: an item the store takes is
// one it can return, and a find whose items would not fit in one reply is refused
// with a status before the daemon builds it (dpfs(1), "The keychain").
import DPFSProtocol
import Foundation
import Testing
@testable import ItemStore

@Suite struct ItemSizeTests {
    let mail = ["service": "mail", "account": "alice"]
    static let attributeLimit = ControlProtocol.maxAttributeSize
    static let dataLimit = ControlProtocol.maxItemDataSize

    @Test func anAttributeValueOverTheLimitIsRefused() throws {
        let t = try TestDevice()
        let tooLong = String(repeating: "x", count: Self.attributeLimit + 1)
        for name in ["label", "service", "account", "description", "comment"] {
            let response = t.add(mail.merging([name: tooLong]) { $1 })
            #expect(response.status == SecStatus.param, "a \(name) of \(tooLong.utf8.count) bytes")
            #expect(response.message?.contains("\(Self.attributeLimit)") == true, "\(response.message ?? "no message")")
        }
        // Counted in UTF-8 bytes, not characters.
        let wide = String(repeating: "ü", count: Self.attributeLimit / 2 + 1)
        #expect(t.add(mail.merging(["label": wide]) { $1 }).status == SecStatus.param)
        #expect(t.find(["service": "mail"]).status == SecStatus.itemNotFound, "nothing was added")

        let longest = String(repeating: "x", count: Self.attributeLimit)
        #expect(t.add(mail.merging(["label": longest]) { $1 }).status == 0)
        #expect(t.update(mail, to: ["label": tooLong]).status == SecStatus.param)
        #expect(t.update(mail, to: ["comment": tooLong]).status == SecStatus.param)
        let found = try #require(t.find(mail, returning: "attributes").items.first)
        #expect(found.attributes?["label"]?.utf8.count == Self.attributeLimit && found.attributes?["comment"] == nil)
    }

    /// The largest item the store takes, every attribute at its longest and its data at
    /// its largest, comes back whole, in a reply far within a frame.
    @Test func theLargestItemIsReturnable() throws {
        let t = try TestDevice()
        let longest = String(repeating: "v", count: Self.attributeLimit)
        var attributes: [String: String] = [:]
        for name in ["service", "account", "label", "description", "comment"] { attributes[name] = longest }
        attributes["generic"] = String(repeating: "ab", count: Self.attributeLimit / 2)
        #expect(t.add(attributes, data: String(repeating: "d", count: Self.dataLimit)).status == 0)
        let response = t.find(["service": longest], returning: "both")
        #expect(response.status == 0)
        let reply = try ControlCoding.encode(ControlReply(ok: true, keychain: response))
        #expect(reply.count < ControlProtocol.maxBodySize)
    }

    /// A find of every item whose data, together, is more than a reply may carry (the
    /// CLI refused the frame, with no status, after the daemon had built it whole):
    /// errSecAllocate with a hint, while the same items' attributes still come back.
    @Test func aFindWhoseReplyWouldNotFitIsRefused() throws {
        let t = try TestDevice()
        let data = String(repeating: "d", count: Self.dataLimit)
        let count = ControlProtocol.maxBodySize / Self.dataLimit + 4
        for index in 0..<count { #expect(t.add(["service": "bulk", "account": "\(index)"], data: data).status == 0) }
        let all = t.find(["service": "bulk"], limit: "all")
        #expect(all.status == -108, "errSecAllocate")
        #expect(all.items.count == 0)
        #expect(all.message?.contains("narrow") == true, "\(all.message ?? "no message")")
        #expect(t.find(["service": "bulk"], limit: "all", returning: "attributes").items.count == count)
        #expect(t.find(["service": "bulk"]).items.first?.data?.count == Self.dataLimit)
    }
}
