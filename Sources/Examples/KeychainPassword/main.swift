// Stores a password in the keychain, finds it, updates it and deletes it, as an iOS
// app does (WhenUnlocked, the default). With --locked (the device locked), it shows
// what iOS answers then: the password stored earlier cannot be read, and no
// WhenUnlocked item can be added.
// Run: DPFS_MOUNT=/mnt/sandbox .build/debug/ExampleKeychainPassword [--locked]
import ExampleSupport
import Foundation
import Security

let run = ExampleRun()
let service = "com.example.notes.login"

@MainActor func query(account: String) -> [String: Any] {
    [kSecClass as String: kSecClassGenericPassword,
     kSecAttrService as String: service,
     kSecAttrAccount as String: account]
}

@MainActor func readPassword(account: String) -> (OSStatus, String?) {
    var query = query(account: account)
    query[kSecReturnData as String] = kCFBooleanTrue
    query[kSecMatchLimit as String] = kSecMatchLimitOne
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    return (status, (result as? Data).flatMap { String(data: $0, encoding: .utf8) })
}

@MainActor func store(account: String, password: String) -> OSStatus {
    var item = query(account: account)
    item[kSecValueData as String] = password.data(using: .utf8)
    item[kSecAttrAccessible as String] = kSecAttrAccessibleWhenUnlocked
    return SecItemAdd(item as CFDictionary, nil)
}

if run.deviceIsLocked {
    let (status, _) = readPassword(account: "kept")
    run.expect("SecItemCopyMatching(password stored before the lock)", status, errSecInteractionNotAllowed)
    run.expect("SecItemAdd(new WhenUnlocked password)", store(account: "while-locked", password: "x"),
               errSecInteractionNotAllowed)
    run.finish()
}

run.expect("SecItemAdd(alice's password)", store(account: "alice", password: "correct horse"), errSecSuccess)
run.expect("SecItemAdd(the same again)", store(account: "alice", password: "other"), errSecDuplicateItem)
let (found, password) = readPassword(account: "alice")
run.expect("SecItemCopyMatching(alice)", found, errSecSuccess)
run.check("the password read back is the one stored", password == "correct horse")

let changes: [String: Any] = [kSecValueData as String: Data("battery staple".utf8)]
run.expect("SecItemUpdate(alice, new password)",
           SecItemUpdate(query(account: "alice") as CFDictionary, changes as CFDictionary), errSecSuccess)
run.check("the new password is read back", readPassword(account: "alice").1 == "battery staple")

run.expect("SecItemDelete(alice)", SecItemDelete(query(account: "alice") as CFDictionary), errSecSuccess)
run.expect("SecItemCopyMatching(alice, deleted)", readPassword(account: "alice").0, errSecItemNotFound)

// Leave one password behind for the --locked run to try.
_ = SecItemDelete(query(account: "kept") as CFDictionary)
run.expect("SecItemAdd(a password kept for later)", store(account: "kept", password: "kept"), errSecSuccess)
run.finish()
