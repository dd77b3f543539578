// A persistent reference names its item's row for the item's life: it finds the item
// after any change of its attributes, data or group, and after the store reopens; it
// reaches only what its caller's query without it could, and a deleted item's, a
// forged one or another device's finds nothing.
import DPFSProtocol
import Foundation
import GRDB
import Testing
@testable import ItemStore

@Suite struct PersistentRefTests {
    static let team = "ABCDE12345"
    static let shared = "\(team).com.example.shared"
    let mailPlist = entitlementsPlist(appID: "\(team).com.example.mail", groups: ["\(team).com.example.mail", shared])
    let notesPlist = entitlementsPlist(appID: "\(team).com.example.notes", groups: ["\(team).com.example.notes", shared])

    private func ref(_ response: KeychainResponse) throws -> String {
        try #require(response.items.first?.attributes?[PersistentReference.attributeName])
    }

    @Test func aRefFindsItsItemAfterEveryChange() throws {
        let t = try TestDevice(sandboxApp: "com.example.mail", entitlements: mailPlist)
        let ref = try ref(t.add(["service": "s", "account": "a"], returning: "attributes"))
        #expect(try self.ref(t.find(["service": "s", "account": "a"], returning: "attributes")) == ref)
        #expect(t.update(["service": "s", "account": "a"],
                         to: ["service": "t", "account": "b", "accessGroup": Self.shared, "label": "l"]).status == 0)
        #expect(t.secret(["persistentRef": ref]) == "secret")
        // A synchronizable item too: the ref alone names it.
        #expect(t.update(["persistentRef": ref], to: ["synchronizable": "yes"], newData: "changed").status == 0)
        #expect(t.secret(["persistentRef": ref]) == "changed")
        try t.reopenStore()
        #expect(t.secret(["persistentRef": ref]) == "changed")
        #expect(try self.ref(t.find(["persistentRef": ref], returning: "attributes")) == ref)
        // The query's other terms still apply.
        #expect(t.find(["persistentRef": ref, "account": "a"]).status == SecStatus.itemNotFound)
        #expect(t.find(["persistentRef": ref, "synchronizable": "no"]).status == SecStatus.itemNotFound)
        #expect(t.find(["persistentRef": ref, "class": "inet"]).status == SecStatus.itemNotFound)

        #expect(t.delete(["persistentRef": ref]).status == 0)
        #expect(t.find(["persistentRef": ref]).status == SecStatus.itemNotFound)
        // The same identity added again is another item, with another ref.
        let again = try self.ref(t.add(["service": "t", "account": "b", "accessGroup": Self.shared,
                                        "synchronizable": "yes"], returning: "attributes"))
        #expect(again != ref)
        #expect(t.find(["persistentRef": ref]).status == SecStatus.itemNotFound)
    }

    @Test func aRefReachesOnlyWhatItsCallerMayRead() throws {
        let t = try TestDevice(sandboxApp: "com.example.mail", entitlements: mailPlist)
        let notes = try t.registerApp(notesPlist)
        let mine = try ref(t.add(["service": "private"], returning: "attributes"))
        let ours = try ref(t.add(["service": "shared", "accessGroup": Self.shared], returning: "attributes"))
        #expect(t.find(["persistentRef": mine], app: notes).status == SecStatus.itemNotFound)
        #expect(t.update(["persistentRef": mine], to: ["label": "x"], app: notes).status == SecStatus.itemNotFound)
        #expect(t.delete(["persistentRef": mine], app: notes).status == SecStatus.itemNotFound)
        #expect(t.secret(["persistentRef": mine]) == "secret")
        #expect(t.secret(["persistentRef": ours], app: notes) == "secret")
    }

    @Test func aForgedOrForeignRefFindsNothing() throws {
        let t = try TestDevice()
        let ref = try ref(t.add(["service": "s"], returning: "attributes"))
        // Another device's first item has the same row id; its store did not make the ref.
        let other = try TestDevice()
        other.add(["service": "s"])
        #expect(other.find(["persistentRef": ref]).status == SecStatus.itemNotFound)

        let reference = try #require(PersistentReference(hex: ref))
        for index in reference.token.indices {
            var token = reference.token
            token[index] ^= 1
            let forged = try #require(PersistentReference(itemClass: "genp", token: token))
            #expect(t.find(["persistentRef": forged.hex]).status == SecStatus.itemNotFound, "byte \(index)")
        }
        let otherClass = try #require(PersistentReference(itemClass: "inet", token: reference.token))
        #expect(t.find(["persistentRef": otherClass.hex]).status == SecStatus.itemNotFound)
        // The row id (1) is masked, not carried as it is.
        #expect(Array(reference.token.suffix(8)) != [0, 0, 0, 0, 0, 0, 0, 1])

        #expect(t.find(["persistentRef": "00ff"]).status == SecStatus.param)
        #expect(t.add(["service": "x", "persistentRef": ref]).status == SecStatus.param)
        #expect(t.update(["service": "s"], to: ["persistentRef": ref]).status == SecStatus.param)
    }

    @Test func aRefQueryReadsOneRowByItsID() throws {
        let t = try TestDevice()
        for i in 0..<20 { t.add(["service": "s", "account": "user\(i)"]) }
        let ref = try ref(t.find(["account": "user7"], returning: "attributes"))
        let query = try ItemQuery(ParsedAttributes(["persistentRef": ref], isQuery: true),
                                  scope: AccessScope(try t.store.entitlements(of: nil)), passcodeSet: true, keys: t.store.keys)
        let rows = try t.store.pool.read { db in
            try Row.fetchAll(db, sql: query.sql(withSecret: false, limitOne: true), arguments: query.statementArguments)
        }
        #expect(rows.count == 1)
        let plan = try t.store.pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query.sql(withSecret: false, limitOne: true),
                             arguments: query.statementArguments)
                .compactMap { String.fromDatabaseValue($0["detail"]) }.joined(separator: "; ")
        }
        #expect(plan.contains("INTEGER PRIMARY KEY") || plan.contains("rowid=?"), "\(plan)")
    }
}
