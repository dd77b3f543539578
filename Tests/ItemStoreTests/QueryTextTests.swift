// A query's SELECT is kept per shape (QueryText): its places must match the query's
// arguments one for one, whatever terms the query has, and a kept text must serve
// every query of its shape and no other.
import DPFSProtocol
import Foundation
import GRDB
import Testing
@testable import ItemStore

@Suite struct QueryTextTests {
    static let team = "ABCDE12345"

    /// Attribute sets that between them reach every term a query can have.
    static let attributeSets: [[String: String]] = [
        [:],
        ["service": "s"],
        ["service": "s", "account": "a", "label": "l"],
        ["class": "inet", "server": "example.com", "port": "443", "protocol": "htps", "path": "/"],
        ["class": "inet", "securityDomain": "d", "authenticationType": "dflt", "accessible": "WhenUnlocked"],
        ["class": "keys", "keyClass": "private", "applicationTag": "74616720", "keyType": "ec", "keySizeInBits": "256"],
        ["class": "keys", "applicationLabel": "00ff", "tokenID": "secureEnclave", "synchronizable": "any"],
        ["service": "s", "accessGroup": "\(team).com.example.mail", "synchronizable": "yes"],
    ]

    @Test func everyShapeBindsAsManyArgumentsAsItHasPlaces() throws {
        let t = try TestDevice(sandboxApp: "com.example.mail", entitlements: entitlementsPlist(
            appID: "\(Self.team).com.example.mail", groups: ["\(Self.team).com.example.mail", "\(Self.team).com.example.shared"]))
        t.add(["service": "s", "account": "a", "label": "l"], data: "secret")
        let scope = AccessScope(try t.store.entitlements(of: nil))
        for attributes in Self.attributeSets {
            for passcodeSet in [true, false] {
                let query = try ItemQuery(ParsedAttributes(attributes), scope: scope, passcodeSet: passcodeSet, keys: t.store.keys)
                for withSecret in [true, false] {
                    for limitOne in [true, false] {
                        let sql = query.sql(withSecret: withSecret, limitOne: limitOne)
                        #expect(sql.hasSuffix(limitOne ? "ORDER BY id LIMIT 1" : "ORDER BY id"), "\(sql)")
                        #expect(sql.contains(", secret FROM") == withSecret, "\(sql)")
                        // GRDB refuses arguments that do not match the places one for one.
                        #expect(throws: Never.self, "\(attributes): \(sql)") {
                            try t.store.pool.read { try Row.fetchAll($0, sql: sql, arguments: query.statementArguments) }
                        }
                    }
                }
            }
        }
        // The terms come in the arguments' order: the item is found by every one of its attributes.
        #expect(t.secret(["service": "s", "account": "a", "label": "l"]) == "secret")
        #expect(t.find(["service": "s", "account": "a", "label": "other"]).status == SecStatus.itemNotFound)
    }

    @Test func aWildcardScopeNamesNoGroupAndLimitsAfterReading() throws {
        let t = try TestDevice(sandboxApp: "com.example.mail", entitlements: entitlementsPlist(
            appID: "\(Self.team).com.example.mail", groups: ["\(Self.team).*"]))
        let query = try ItemQuery(ParsedAttributes(["service": "s"]), scope: AccessScope(try t.store.entitlements(of: nil)),
                                  passcodeSet: true, keys: t.store.keys)
        let sql = query.sql(withSecret: false, limitOne: true)
        #expect(!sql.contains("accessGroup ="), "\(sql)")
        #expect(!sql.contains("accessGroup IN"), "\(sql)")
        #expect(sql.hasSuffix("ORDER BY id"), "a wildcard scope filters after reading: \(sql)")
        #expect(throws: Never.self) {
            try t.store.pool.read { try Row.fetchAll($0, sql: sql, arguments: query.statementArguments) }
        }
    }

    @Test func termsTakeTheirBitsInTheOrderTheyAreListed() {
        #expect(QueryTerm.all.map(\.bit) == Array(0..<QueryTerm.all.count))
        #expect(QueryTerm.all.count <= UInt32.bitWidth)
    }

    @Test func aKeptTextServesItsShapeOnly() throws {
        let t = try TestDevice()
        let scope = AccessScope(try t.store.entitlements(of: nil))
        func sql(_ attributes: [String: String]) throws -> String {
            try ItemQuery(ParsedAttributes(attributes), scope: scope, passcodeSet: true, keys: t.store.keys)
                .sql(withSecret: true, limitOne: true)
        }
        #expect(try sql(["service": "one", "account": "a"]) == sql(["service": "two", "account": "b"]))
        #expect(try sql(["service": "one"]) != sql(["service": "one", "account": "a"]))
        #expect(try sql(["service": "one"]) != sql(["service": "one", "label": "l"]))
        #expect(try !sql(["account": "a"]).contains("\"service\" = ?"))
    }
}
