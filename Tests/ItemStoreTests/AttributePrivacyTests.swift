// Item attributes at rest (issue 15): nothing a caller typed is readable from the
// database files, a sealed attribute set is bound to its row, and finds still go
// through the identity index although they compare keyed hashes.
import DPFSProtocol
import DataProtection
import Foundation
import GRDB
import Testing
@testable import ItemStore

@Suite struct AttributePrivacyTests {
    static let team = "ABCDE12345"
    /// The app's only keychain group is a wildcard, so the items' group below is in
    /// no registration: any trace of it in the files would come from the items.
    static func device() throws -> TestDevice {
        try TestDevice(sandboxApp: "com.example.mail", entitlements: entitlementsPlist(
            appID: "\(team).com.example.mail", groups: ["\(team).*"]))
    }

    static let markers = [
        "SVC-marker-4b1d8e", "ACCT-marker-93c0fa", "LABEL-marker-7e22d1", "\(team).GROUP-marker-c5a0b7",
        "srv-marker-61f3.example.org", "/PATH-marker-0d9e44", "DOMAIN-marker-af3c19", "ACCT2-marker-5e8b02",
        "LABEL2-marker-2c4f6a", "SVC3-marker-b8d214",
    ]

    /// The marker as UTF-8, UTF-16 of either byte order, and base64 at each of the
    /// three alignments it can have inside a longer encoded run.
    static func encodings(_ marker: String) -> [Data] {
        var forms = [Data(marker.utf8), marker.data(using: .utf16LittleEndian), marker.data(using: .utf16BigEndian)]
            .compactMap { $0 }
        for shift in 0..<3 {
            let encoded = (Data(repeating: 0, count: shift) + Data(marker.utf8)).base64EncodedString()
            forms.append(Data(encoded.dropFirst(shift == 0 ? 0 : 4).dropLast(4).utf8))
        }
        return forms
    }

    static func leaked(_ markers: [String] = markers, in files: Data) -> [String] {
        markers.filter { marker in encodings(marker).contains { files.contains($0) } }
    }

    @Test func noAttributeIsReadableFromTheDatabaseFiles() throws {
        let t = try Self.device()
        let group = Self.markers[3]
        #expect(t.add(["service": Self.markers[0], "account": Self.markers[1], "label": Self.markers[2],
                       "accessGroup": group]).status == 0)
        #expect(t.add(["class": "inet", "server": Self.markers[4], "path": Self.markers[5],
                       "securityDomain": Self.markers[6], "account": Self.markers[7], "protocol": "https",
                       "port": "8443", "accessGroup": group]).status == 0)
        #expect(t.add(["service": "plain", "label": "first"]).status == 0)
        #expect(t.update(["service": "plain"], to: ["label": Self.markers[8], "service": Self.markers[9]]).status == 0)
        // The store still answers with every attribute.
        let found = t.find(["service": Self.markers[0], "account": Self.markers[1]], returning: "attributes")
        #expect(found.items.first?.attributes?["label"] == Self.markers[2])
        #expect(found.items.first?.attributes?["accessGroup"] == group)
        let web = t.find(["class": "inet", "server": Self.markers[4]], returning: "attributes")
        #expect(web.items.first?.attributes?["path"] == Self.markers[5])
        #expect(t.find(["label": Self.markers[8]], returning: "attributes").items.first?.attributes?["service"]
                    == Self.markers[9])

        let beforeCheckpoint = t.databaseFiles()
        #expect(Self.leaked(in: beforeCheckpoint) == [])
        _ = try t.store.pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        let afterCheckpoint = t.databaseFiles()
        #expect(Self.leaked(in: afterCheckpoint) == [])
        // The scan can fail: the app registration (not an item attribute) is in clear.
        #expect(Self.leaked(["com.example.mail"], in: afterCheckpoint) == ["com.example.mail"])
    }

    @Test func aSwappedAttributeSetFailsOnlyItsItems() throws {
        let t = try TestDevice()
        t.add(["service": "a", "account": "alice"], data: "alpha")
        t.add(["service": "b", "account": "bob"], data: "bravo")
        t.add(["service": "c", "account": "carol"], data: "charlie")
        try t.tamper("""
            CREATE TEMP TABLE original AS SELECT id, attributes FROM items WHERE id IN (1, 2);
            UPDATE items SET attributes = (SELECT attributes FROM original WHERE original.id <> items.id)
                WHERE id IN (1, 2);
            """)
        for service in ["a", "b"] {
            #expect(t.find(["service": service], returning: "attributes").status == SecStatus.decode)
            #expect(t.find(["service": service], returning: "both").status == SecStatus.decode)
            #expect(t.update(["service": service], to: ["label": "x"]).status == SecStatus.decode)
        }
        #expect(t.find([:], limit: "all", returning: "attributes").status == SecStatus.decode)
        #expect(t.find(["service": "c"], returning: "attributes").items.first?.attributes?["account"] == "carol")
        #expect(t.update(["service": "c"], to: ["label": "fine"]).status == 0)
        // The secrets' own seals are intact, but an item's access control lives in its
        // sealed attributes: a data read fails closed rather than skip a check it cannot
        // see. The damaged items can be deleted.
        #expect(t.find(["service": "a"], returning: "data").status == SecStatus.decode)
        #expect(t.delete(["service": "a"]).status == 0)
        #expect(t.delete(["service": "b"]).status == 0)
        #expect(t.find([:], limit: "all", returning: "attributes").items.count == 1)
    }

    @Test func aRowWhoseHashedColumnWasCopiedFailsItsSeals() throws {
        let t = try TestDevice()
        t.add(["service": "a", "account": "alice"], data: "alpha")
        t.add(["service": "b", "account": "bob"], data: "bravo")
        // An attacker makes row 2 answer a find for alice's account.
        try t.tamper("UPDATE items SET account = (SELECT account FROM items WHERE id = 1) WHERE id = 2")
        #expect(t.find(["service": "b", "account": "alice"]).status == SecStatus.decode)
        #expect(t.find(["service": "b", "account": "alice"], returning: "attributes").status == SecStatus.decode)
        #expect(t.secret(["service": "a"]) == "alpha")
    }

    @Test func aColumnOfTheWrongTypeIsDamageNotACrash() throws {
        // Finds read the columns by position, through SQLite's C API: a hash that is
        // text, sealed attributes that are text, a label that is a number.
        for damage in ["UPDATE items SET service = 'text' WHERE id = 1",
                       "UPDATE items SET attributes = 'text' WHERE id = 1",
                       "UPDATE items SET label = 7 WHERE id = 1"] {
            let t = try TestDevice()
            t.add(["service": "a", "account": "alice"], data: "alpha")
            t.add(["service": "b", "account": "bob"], data: "bravo")
            try t.tamper(damage)
            #expect(t.find(["account": "alice"]).status == SecStatus.decode, "\(damage)")
            #expect(t.secret(["account": "bob"]) == "bravo", "\(damage)")
        }
    }

    /// EXPLAIN QUERY PLAN of the SELECT a find runs.
    static func plan(_ t: TestDevice, _ attributes: [String: String], scope: AccessScope) throws -> String {
        let query = try ItemQuery(ParsedAttributes(attributes), scope: scope, passcodeSet: true, keys: t.store.keys)
        return try t.store.pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query.sql(withSecret: true, limitOne: true),
                             arguments: query.statementArguments)
                .compactMap { String.fromDatabaseValue($0["detail"]) }.joined(separator: "; ")
        }
    }

    @Test func findsUseTheIdentityIndex() throws {
        let t = try TestDevice()
        for i in 0..<50 { t.add(["service": "s\(i % 5)", "account": "user\(i)"]) }
        let exact = AccessScope(try t.store.entitlements(of: nil))
        let wildcard = AccessScope(try Entitlements(plist: Data(entitlementsPlist(
            appID: "\(Self.team).com.example.mail", groups: ["\(Self.team).*"]).utf8)))
        for (attributes, scope) in [(["service": "s1", "account": "user6"], exact),
                                    (["service": "s1"], exact),
                                    (["class": "inet", "server": "example.org", "account": "a"], exact),
                                    (["service": "s1", "account": "user6"], wildcard)] {
            let plan = try Self.plan(t, attributes, scope: scope)
            #expect(plan.contains("USING INDEX items_identity"), "\(attributes): \(plan)")
            #expect(!plan.contains("SCAN items"), "\(attributes): \(plan)")
        }
        let plan = try Self.plan(t, ["service": "s1", "account": "user6"], scope: exact)
        #expect(plan.contains("account=?"), "service and account both narrow the index search: \(plan)")
    }

    @Test func aVersion1StoreIsRefused() throws {
        let path = NSTemporaryDirectory() + "dpfs-kc-v1-" + UUID().uuidString + ".sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let old = try DatabaseQueue(path: path)
        try old.write { db in
            try db.execute(sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1');
                CREATE TABLE items (id INTEGER PRIMARY KEY, service TEXT);
                """)
        }
        try old.close()
        #expect {
            try ItemStore.initialize(path: path, appBundleID: nil, entitlementsPlist: nil)
        } throws: { error in
            "\(error)".contains("schema v1") && "\(error)".contains("schema v3 only")
        }
    }
}
