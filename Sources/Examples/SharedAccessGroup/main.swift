// Two apps of one team share a login through a keychain access group listed in both
// apps' keychain-access-groups entitlement. Run as the writer, then as the reader:
//   DPFS_APP=com.example.mail  ExampleSharedAccessGroup write
//   DPFS_APP=com.example.notes ExampleSharedAccessGroup read [--locked]
// An app outside the group (`read-outside`) neither sees the item nor may name the group.
import ExampleSupport
import Foundation
import Security

let run = ExampleRun()
let sharedGroup = "ABCDE12345.com.example.shared"
let item: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                           kSecAttrService as String: "com.example.sso",
                           kSecAttrAccount as String: "team-token"]

@MainActor func read(naming group: String?) -> (OSStatus, String?) {
    var query = item
    if let group { query[kSecAttrAccessGroup as String] = group }
    query[kSecReturnData as String] = true
    var result: AnyObject?
    let status = withUnsafeMutablePointer(to: &result) {
        SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
    }
    return (status, (result as? Data).map { String(decoding: $0, as: UTF8.self) })
}

switch CommandLine.arguments.dropFirst().first {
case "write":
    _ = SecItemDelete([kSecClass as String: kSecClassGenericPassword,
                       kSecAttrAccessGroup as String: sharedGroup] as CFDictionary)
    var shared = item
    shared[kSecAttrAccessGroup as String] = sharedGroup
    shared[kSecValueData as String] = Data("sso-token-42".utf8)
    run.expect("SecItemAdd(token into \(sharedGroup))", SecItemAdd(shared as CFDictionary, nil), errSecSuccess)
case "read":
    if run.deviceIsLocked {
        run.expect("SecItemCopyMatching(shared token, locked)", read(naming: nil).0, errSecInteractionNotAllowed)
    } else {
        let (status, token) = read(naming: nil)
        run.expect("SecItemCopyMatching(shared token)", status, errSecSuccess)
        run.check("the token is the one the other app stored", token == "sso-token-42")
    }
case "read-outside":
    run.expect("SecItemCopyMatching(shared token, app outside the group)", read(naming: nil).0, errSecItemNotFound)
    run.expect("SecItemCopyMatching(naming the group)", read(naming: sharedGroup).0, errSecMissingEntitlement)
default:
    print("usage: ExampleSharedAccessGroup write|read|read-outside [--locked]")
    exit(2)
}
run.finish()
