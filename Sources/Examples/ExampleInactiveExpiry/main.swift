// Example: a file that expires when the user is inactive (iOS 17's
// completeWhenUserInactive), run inside the sandbox with `dpfs run`.
//
//   dpfs run MNT -- ExampleInactiveExpiry write   # Library/Caches/feed.json, completeWhenUserInactive
//   dpfs run MNT -- ExampleInactiveExpiry read    # "readable: …" or "unavailable (EPERM)"
//
// A feed an app refreshes in the background overnight: readable while the device is
// locked, unlike a complete file, but not once the device has stayed locked for the
// user-inactive period (dpfs mount --user-inactive-period, 24 h by default; a test
// moves the device's clock with `dpfs clock advance MNT 24h`), and again after the
// next unlock. Before the first unlock it is unavailable, as untilFirstAuth is.
import DataProtectionKit
import Foundation

func feed() -> URL {
    // The iOS idiom: under `dpfs run` this is the mount's Library/Caches.
    guard let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first else {
        fatalError("no caches directory")
    }
    return caches.appendingPathComponent("feed.json")
}

func write() throws {
    // On iOS: try data.write(to: feed(), options: [.atomic, .completeFileProtectionWhenUserInactive])
    try Data(#"{"items": ["refreshed in the background"]}"#.utf8)
        .writeProtected(to: feed(), options: [.atomic, .completeFileProtectionWhenUserInactive])
    let protection = feed().fileProtection
    print("feed.json: written, \(protection?.rawValue ?? "no class")")
    guard protection == .completeWhenUserInactive else { throw CocoaError(.fileWriteUnknown) }
}

func read() {
    do {
        let text = String(decoding: try Data(contentsOf: feed()), as: UTF8.self)
        print("feed.json: readable: \(text)")
    } catch where error.isProtectedDataUnavailable {
        print("feed.json: unavailable (EPERM)")
    } catch {
        print("feed.json: error: \(error)")
    }
}

do {
    switch CommandLine.arguments.dropFirst().first {
    case "write": try write()
    case "read": read()
    default:
        FileHandle.standardError.write(Data("usage: ExampleInactiveExpiry write|read\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("ExampleInactiveExpiry: \(error)\n".utf8))
    exit(1)
}
