// A synchronizable (iCloud Keychain) item beside a local one with the same service
// and account: queries that do not mention kSecAttrSynchronizable see only the local
// one, kSecAttrSynchronizableAny sees both. AfterFirstUnlock items stay readable
// while the device is locked, so this example answers the same with --locked.
import ExampleSupport
import Foundation
import Security

let run = ExampleRun()
let base: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                           kSecAttrService as String: "com.example.sync-demo",
                           kSecAttrAccount as String: "settings"]

var anyQuery = base
anyQuery[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
_ = SecItemDelete(anyQuery as CFDictionary)

var local = base
local[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlock
local[kSecValueData as String] = Data("local".utf8)
var synced = local
synced[kSecAttrSynchronizable as String] = kCFBooleanTrue
synced[kSecValueData as String] = Data("synced".utf8)
run.expect("SecItemAdd(local item)", SecItemAdd(local as CFDictionary, nil), errSecSuccess)
run.expect("SecItemAdd(synchronizable item, same service and account)", SecItemAdd(synced as CFDictionary, nil), errSecSuccess)

var plain = base
plain[kSecReturnData as String] = true
var result: CFTypeRef?
run.expect("SecItemCopyMatching(no sync key)", SecItemCopyMatching(plain as CFDictionary, &result), errSecSuccess)
run.check("it is the local item", (result as? Data) == Data("local".utf8))

var all = anyQuery
all[kSecMatchLimit as String] = kSecMatchLimitAll
all[kSecReturnAttributes as String] = true
run.expect("SecItemCopyMatching(kSecAttrSynchronizableAny, all)", SecItemCopyMatching(all as CFDictionary, &result), errSecSuccess)
let flags = (result as? [[String: Any]])?.compactMap { $0[kSecAttrSynchronizable as String] as? Bool } ?? []
run.check("both items, one synchronizable (sync = \(flags))", flags.sorted { !$0 && $1 } == [false, true])

var thisDeviceOnly = synced
thisDeviceOnly[kSecAttrAccount as String] = "device-bound"
thisDeviceOnly[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
run.expect("SecItemAdd(synchronizable + ThisDeviceOnly)", SecItemAdd(thisDeviceOnly as CFDictionary, nil), errSecParam)

run.expect("SecItemDelete(kSecAttrSynchronizableAny)", SecItemDelete(anyQuery as CFDictionary), errSecSuccess)
run.finish()
