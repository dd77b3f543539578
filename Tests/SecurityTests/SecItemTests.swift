// SecItem calls against a mounted device: the four operations on both classes, the
// statuses iOS gives, result shapes under Apple's keys, synchronizable, access groups
// across apps, malformed queries, and many threads at once.
import Foundation
import Security
import XCTest

final class SecItemTests: MountedDeviceTestCase {
    private func password(service: String, account: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
         kSecAttrAccount as String: account]
    }

    private func add(_ attributes: [String: Any], data: String) -> OSStatus {
        var item = attributes
        item[kSecValueData as String] = Data(data.utf8)
        return SecItemAdd(item as CFDictionary, nil)
    }

    private func findData(_ query: [String: Any]) -> (OSStatus, String?) {
        var query = query
        query[kSecReturnData as String] = true
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, (result as? Data).map { String(decoding: $0, as: UTF8.self) })
    }

    func testGenericPasswordAddFindUpdateDelete() {
        let item = password(service: "mail", account: "alice")
        XCTAssertEqual(add(item, data: "hunter2"), errSecSuccess)
        XCTAssertEqual(add(item, data: "other"), errSecDuplicateItem)
        let (found, data) = findData(item)
        XCTAssertEqual(found, noErr)
        XCTAssertEqual(data, "hunter2")

        let changes: [String: Any] = [kSecValueData as String: Data("s3cret".utf8)]
        XCTAssertEqual(SecItemUpdate(item as CFDictionary, changes as CFDictionary), errSecSuccess)
        XCTAssertEqual(findData(item).1, "s3cret")
        XCTAssertEqual(SecItemUpdate(password(service: "none", account: "x") as CFDictionary, changes as CFDictionary),
                       errSecItemNotFound)

        XCTAssertEqual(SecItemDelete(item as CFDictionary), errSecSuccess)
        XCTAssertEqual(findData(item).0, errSecItemNotFound)
        XCTAssertEqual(SecItemDelete(item as CFDictionary), errSecItemNotFound)
    }

    func testAnOversizedItemIsErrSecParam() {
        // Once "no device answers" (errSecNotAvailable) for data over the frame's limit,
        // and accepted between 64 KiB and that, though no backup could carry it.
        let item = password(service: "big", account: "a")
        var add = item
        add[kSecValueData as String] = Data(repeating: 1, count: 64 << 10)
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecSuccess, "64 KiB is the most an item holds")
        var over = password(service: "big", account: "b")
        for size in [(64 << 10) + 1, 20 << 20] {
            over[kSecValueData as String] = Data(repeating: 1, count: size)
            XCTAssertEqual(SecItemAdd(over as CFDictionary, nil), errSecParam, "\(size) bytes")
            let changes: [String: Any] = [kSecValueData as String: Data(repeating: 2, count: size)]
            XCTAssertEqual(SecItemUpdate(item as CFDictionary, changes as CFDictionary), errSecParam, "\(size) bytes")
        }
        XCTAssertEqual(findData(password(service: "big", account: "b")).0, errSecItemNotFound)
        XCTAssertEqual(findData(item).1?.count, 64 << 10)
    }

    func testInternetPasswordAttributes() throws {
        let item: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com",
            kSecAttrProtocol as String: kSecAttrProtocolHTTPS, kSecAttrPort as String: 443,
            kSecAttrPath as String: "/login", kSecAttrAccount as String: "bob",
            kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeHTMLForm,
            kSecAttrSecurityDomain as String: "realm", kSecAttrLabel as String: "Example",
        ]
        XCTAssertEqual(add(item, data: "pw"), errSecSuccess)
        XCTAssertEqual(add(item, data: "pw"), errSecDuplicateItem)
        var query: [String: Any] = [kSecClass as String: kSecClassInternetPassword,
                                    kSecAttrServer as String: "example.com", kSecAttrPort as String: 443,
                                    kSecReturnAttributes as String: kCFBooleanTrue as Any,
                                    kSecReturnData as String: true]
        var result: AnyObject?
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        let attributes = try XCTUnwrap(result as? [String: Any])
        XCTAssertEqual(attributes[kSecClass as String] as? String, "inet")
        XCTAssertEqual(attributes[kSecAttrServer as String] as? String, "example.com")
        XCTAssertEqual(attributes[kSecAttrProtocol as String] as? String, "htps")
        XCTAssertEqual(attributes[kSecAttrPort as String] as? Int, 443)
        XCTAssertEqual(attributes[kSecAttrPath as String] as? String, "/login")
        XCTAssertEqual(attributes[kSecAttrAuthenticationType as String] as? String, "form")
        XCTAssertEqual(attributes[kSecAttrSecurityDomain as String] as? String, "realm")
        XCTAssertEqual(attributes[kSecAttrLabel as String] as? String, "Example")
        XCTAssertEqual(attributes[kSecValueData as String] as? Data, Data("pw".utf8))
        query[kSecAttrPort as String] = 80
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecItemNotFound)
    }

    func testMatchLimitAllAndAppleAttributeKeys() throws {
        for account in ["a", "b", "c"] {
            XCTAssertEqual(add(password(service: "web", account: account), data: "pw-\(account)"), errSecSuccess)
        }
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "web",
                                    kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnData as String: true]
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual((result as? [Data])?.map { String(decoding: $0, as: UTF8.self) }, ["pw-a", "pw-b", "pw-c"])

        query[kSecReturnData as String] = nil
        query[kSecReturnAttributes as String] = true
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        let items = try XCTUnwrap(result as? [[String: Any]])
        XCTAssertEqual(items.count, 3)
        let first = try XCTUnwrap(items.first)
        XCTAssertEqual(first["class"] as? String, "genp")
        XCTAssertEqual(first["svce"] as? String, "web")
        XCTAssertEqual(first["acct"] as? String, "a")
        XCTAssertEqual(first["agrp"] as? String, "XXXXXXXXXX.com.example.app")
        XCTAssertEqual(first["pdmn"] as? String, "ak")
        XCTAssertEqual(first["sync"] as? Bool, false)
        let created = try XCTUnwrap(first["cdat"] as? Date)
        XCTAssertLessThan(abs(created.timeIntervalSinceNow), 120)
        XCTAssertNotNil(first["mdat"] as? Date)

        query[kSecMatchLimit as String] = 2
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual((result as? [[String: Any]])?.count, 2)

        query[kSecMatchLimit as String] = kSecMatchLimitOne
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual((result as? [String: Any])?["acct"] as? String, "a")

        // A persistent ref finds its item again, and only it.
        let refQuery: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "b",
                                       kSecReturnPersistentRef as String: true]
        XCTAssertEqual(SecItemCopyMatching(refQuery as CFDictionary, &result), errSecSuccess)
        let ref = try XCTUnwrap(result as? Data)
        let byRef: [String: Any] = [kSecValuePersistentRef as String: ref, kSecClass as String: kSecClassGenericPassword]
        XCTAssertEqual(findData(byRef).1, "pw-b")

        // Without any kSecReturn key the call says whether a match exists and returns nothing.
        result = nil
        XCTAssertEqual(SecItemCopyMatching(password(service: "web", account: "c") as CFDictionary, &result), errSecSuccess)
        XCTAssertNil(result)
        XCTAssertEqual(SecItemCopyMatching(password(service: "web", account: "z") as CFDictionary, nil), errSecItemNotFound)
    }

    func testSynchronizable() {
        let local = password(service: "sync", account: "me")
        var synced = local
        synced[kSecAttrSynchronizable as String] = kCFBooleanTrue
        XCTAssertEqual(add(local, data: "local"), errSecSuccess)
        XCTAssertEqual(add(synced, data: "cloud"), errSecSuccess, "synchronizable is part of the identity")
        XCTAssertEqual(findData(local).1, "local", "a query that does not mention sync sees only local items")
        XCTAssertEqual(findData(synced).1, "cloud")

        var any = local
        any[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
        any[kSecMatchLimit as String] = kSecMatchLimitAll
        any[kSecReturnAttributes as String] = true
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(any as CFDictionary, &result), errSecSuccess)
        let syncFlags = (result as? [[String: Any]])?.compactMap { $0[kSecAttrSynchronizable as String] as? Bool }
        XCTAssertEqual(syncFlags?.sorted { !$0 && $1 }, [false, true])

        var thisDeviceOnly = password(service: "sync", account: "other")
        thisDeviceOnly[kSecAttrSynchronizable as String] = true
        thisDeviceOnly[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        XCTAssertEqual(add(thisDeviceOnly, data: "x"), errSecParam)
    }

    func testAccessGroupsAcrossApps() throws {
        let team = "ABCDE12345"
        try device.addApp("\(team).com.example.mail", groups: ["\(team).com.example.mail", "\(team).shared"])
        try device.addApp("\(team).com.example.notes", groups: ["\(team).com.example.notes", "\(team).shared"])

        setenv("DPFS_APP", "com.example.mail", 1)
        var shared = password(service: "shared", account: "team")
        shared[kSecAttrAccessGroup as String] = "\(team).shared"
        XCTAssertEqual(add(shared, data: "together"), errSecSuccess)
        XCTAssertEqual(add(password(service: "private", account: "mail"), data: "mine"), errSecSuccess)

        setenv("DPFS_APP", "com.example.notes", 1)
        XCTAssertEqual(findData(password(service: "shared", account: "team")).1, "together")
        XCTAssertEqual(findData(password(service: "private", account: "mail")).0, errSecItemNotFound)
        var foreign = password(service: "private", account: "mail")
        foreign[kSecAttrAccessGroup as String] = "\(team).com.example.mail"
        XCTAssertEqual(findData(foreign).0, errSecMissingEntitlement)
        XCTAssertEqual(add(foreign, data: "no"), errSecMissingEntitlement)

        setenv("DPFS_APP", "com.example.unknown", 1)
        XCTAssertEqual(findData(password(service: "shared", account: "team")).0, errSecMissingEntitlement)

        // The sandbox's own app (no DPFS_APP) is not in the team's group.
        unsetenv("DPFS_APP")
        XCTAssertEqual(findData(password(service: "shared", account: "team")).0, errSecItemNotFound)
    }

    func testMalformedQueriesAreErrSecParam() {
        let genp = kSecClassGenericPassword
        let malformed: [[String: Any]] = [
            [kSecAttrService as String: "no class"],
            [kSecClass as String: "nonsense"],
            [kSecClass as String: 42],
            [kSecClass as String: genp, kSecAttrService as String: 7],
            [kSecClass as String: genp, kSecValueData as String: "a string, not Data"],
            [kSecClass as String: genp, kSecAttrAccessible as String: "bogus"],
            [kSecClass as String: genp, kSecAttrSynchronizable as String: "maybe"],
            [kSecClass as String: genp, "nope": "unknown key"],
            [kSecClass as String: kSecClassInternetPassword, kSecAttrPort as String: "443"],
            [kSecClass as String: genp, kSecAttrServer as String: "a genp has no server"],
            [kSecClass as String: genp, kSecAttrSynchronizable as String: kSecAttrSynchronizableAny],
        ]
        for query in malformed {
            XCTAssertEqual(SecItemAdd(query as CFDictionary, nil), errSecParam, "add \(query)")
        }
        let badFinds: [[String: Any]] = [
            [kSecClass as String: genp, kSecReturnData as String: "yes"],
            [kSecClass as String: genp, kSecMatchLimit as String: "lots"],
            [kSecClass as String: genp, kSecMatchLimit as String: 0],
            [kSecClass as String: genp, kSecValuePersistentRef as String: Data("not a ref".utf8)],
        ]
        for query in badFinds {
            XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, nil), errSecParam, "find \(query)")
        }
        let item = password(service: "p", account: "q")
        XCTAssertEqual(add(item, data: "x"), errSecSuccess)
        let badChanges: [String: Any] = [kSecReturnData as String: true]
        XCTAssertEqual(SecItemUpdate(item as CFDictionary, badChanges as CFDictionary), errSecParam)
        var returning = item
        returning[kSecReturnData as String] = true
        XCTAssertEqual(SecItemDelete(returning as CFDictionary), errSecParam)
        XCTAssertEqual(SecItemAdd([kSecClass as String: kSecClassKey] as CFDictionary, nil), errSecParam,
                       "a key item needs a key")
        XCTAssertEqual(SecItemAdd([kSecClass as String: kSecClassCertificate] as CFDictionary, nil), errSecUnimplemented)
        // A wipe class by class, as wrappers do it: the classes that hold nothing here
        // answer as an iPhone's empty ones.
        for itemClass in [kSecClassCertificate, kSecClassIdentity] {
            let all: [String: Any] = [kSecClass as String: itemClass, kSecMatchLimit as String: kSecMatchLimitAll,
                                      kSecReturnAttributes as String: true]
            var found: CFTypeRef?
            XCTAssertEqual(SecItemCopyMatching(all as CFDictionary, &found), errSecItemNotFound, "\(itemClass)")
            XCTAssertNil(found)
            XCTAssertEqual(SecItemDelete([kSecClass as String: itemClass] as CFDictionary), errSecItemNotFound)
            XCTAssertEqual(SecItemUpdate([kSecClass as String: itemClass] as CFDictionary,
                                         [kSecAttrLabel as String: "x"] as CFDictionary), errSecItemNotFound)
            let withPolicy: [String: Any] = [kSecClass as String: itemClass, kSecAttrSyncViewHint as String: "Passwords"]
            XCTAssertEqual(SecItemCopyMatching(withPolicy as CFDictionary, nil), errSecItemNotFound,
                           "whatever else the query holds")
        }
        // The daemon is unharmed.
        XCTAssertEqual(findData(item).1, "x")
    }

    func testWhatWrappersAlsoCall() {
        let item = password(service: "wrapper", account: "w")
        XCTAssertEqual(add(item, data: "v"), errSecSuccess)
        var query = item
        query[kSecReturnData as String] = true
        query[kSecReturnRef as String] = false
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &result), errSecSuccess,
                       "a return key set to false is ignored, as on iOS")
        XCTAssertEqual((result as? Data).map { String(decoding: $0, as: UTF8.self) }, "v")

        var first = [UInt8](repeating: 0, count: 32)
        var second = [UInt8](repeating: 0, count: 32)
        XCTAssertEqual(SecRandomCopyBytes(kSecRandomDefault, first.count, &first), errSecSuccess)
        XCTAssertEqual(SecRandomCopyBytes(kSecRandomDefault, second.count, &second), errSecSuccess)
        XCTAssertNotEqual(first, second)
        XCTAssertNotEqual(first, [UInt8](repeating: 0, count: 32))
        XCTAssertNil(kCFAllocatorDefault)
        XCTAssertEqual(kCFBundleIdentifierKey as String, "CFBundleIdentifier")
        XCTAssertNotNil(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil)
            .map { AnyHashable($0) }, "an access control is Hashable, as a CF object is")
    }

    /// What wrappers send that Apple's keychain accepts: kSecValueData in a query (read
    /// only by an add), kSecReturnRef of a password (it has no ref; nothing more is
    /// returned), and calls whose status is not used.
    func testWhatAppleAcceptsAndIgnores() throws {
        var item = password(service: "ignored", account: "i")
        item[kSecValueData as String] = Data("v".utf8)
        SecItemDelete(item as CFDictionary)
        XCTAssertEqual(SecItemAdd(item as CFDictionary, nil), errSecSuccess)
        var find = item
        find[kSecReturnData as String] = true
        find[kSecReturnRef as String] = true
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(find as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual(result as? Data, Data("v".utf8))
        find[kSecReturnData as String] = nil
        result = nil
        XCTAssertEqual(SecItemCopyMatching(find as CFDictionary, &result), errSecSuccess, "kSecReturnRef alone")
        XCTAssertNil(result)
        let changes: [String: Any] = [kSecValueData as String: Data("w".utf8)]
        XCTAssertEqual(SecItemUpdate(item as CFDictionary, changes as CFDictionary), errSecSuccess)
        XCTAssertEqual(findData(password(service: "ignored", account: "i")).1, "w")
        XCTAssertEqual(SecItemDelete(item as CFDictionary), errSecSuccess, "the query's data is not a match term")
        XCTAssertEqual(findData(password(service: "ignored", account: "i")).0, errSecItemNotFound)
        XCTAssertEqual(errSecUserCanceled, -128)
        XCTAssertEqual(errSecNoSuchAttr, -25303)
    }

    func testEightThreadsAtOnce() {
        let threads = 8, perThread = 25
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                            kSecAttrService as String: "load", kSecAttrAccount as String: "\(thread)-\(index)"]
                var item = query
                item[kSecValueData as String] = Data("v\(thread)-\(index)".utf8)
                let added = SecItemAdd(item as CFDictionary, nil)
                var find = query
                find[kSecReturnData as String] = true
                var result: CFTypeRef?
                let found = SecItemCopyMatching(find as CFDictionary, &result)
                if added != errSecSuccess || found != errSecSuccess || (result as? Data) != Data("v\(thread)-\(index)".utf8) {
                    failures.record("\(thread)-\(index): add \(added), find \(found)")
                }
            }
        }
        XCTAssertEqual(failures.all, [])
        let all: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "load",
                                  kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true]
        var result: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(all as CFDictionary, &result), errSecSuccess)
        XCTAssertEqual((result as? [[String: Any]])?.count, threads * perThread)
    }
}

final class Failures: Sendable {
    private let list = NSLock()
    nonisolated(unsafe) private var entries: [String] = []
    func record(_ entry: String) { list.lock(); entries.append(entry); list.unlock() }
    var all: [String] { list.lock(); defer { list.unlock() }; return entries }
}
