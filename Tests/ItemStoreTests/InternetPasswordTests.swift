// inet items: identity over server, protocol, port, path, account, security domain
// and authentication type.
import DPFSProtocol
import Foundation
import Testing
@testable import ItemStore

@Suite struct InternetPasswordTests {
    let site = ["class": "inet", "server": "example.com", "protocol": "htps", "port": "443",
                "path": "/login", "account": "alice", "securityDomain": "realm", "authenticationType": "form"]

    @Test func everyKeyAttributeIsPartOfTheIdentity() throws {
        let t = try TestDevice()
        #expect(t.add(site, data: "base").status == 0)
        #expect(t.add(site).status == SecStatus.duplicateItem)
        let variants = ["server": "example.org", "protocol": "http", "port": "8443", "path": "/other",
                        "account": "bob", "securityDomain": "other", "authenticationType": "dflt"]
        for (key, value) in variants {
            #expect(t.add(site.merging([key: value]) { $1 }, data: key).status == 0, "\(key)")
        }
        #expect(t.find(["class": "inet", "server": "example.com"], limit: "all").items.count == 7)
        #expect(t.secret(site) == "base")
        #expect(t.secret(["class": "inet", "port": "8443"]) == "port")
    }

    @Test func portsCompareAsNumbers() throws {
        let t = try TestDevice()
        t.add(["class": "inet", "server": "h", "port": "443"])
        #expect(t.find(["class": "inet", "port": "0443"]).status == 0)
        #expect(t.add(["class": "inet", "server": "h", "port": "443x"]).status == SecStatus.param)
    }

    @Test func classesDoNotMix() throws {
        let t = try TestDevice()
        t.add(["class": "inet", "server": "h", "account": "a"])
        t.add(["service": "h", "account": "a"])
        #expect(t.find(["account": "a"], limit: "all").items.count == 1)
        #expect(t.find(["class": "inet", "account": "a"], limit: "all").items.count == 1)
        #expect(t.add(["class": "inet", "service": "s"]).status == SecStatus.param)
        let attributes = t.find(["class": "inet"], returning: "attributes").items.first?.attributes
        #expect(attributes?["server"] == "h" && attributes?["service"] == nil && attributes?["class"] == "inet")
    }
}
