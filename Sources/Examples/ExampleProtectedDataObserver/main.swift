// Example: drop in-memory secrets when protected data is about to go away, as an iOS app
// does on UIApplication.protectedDataWillBecomeUnavailableNotification.
//
//   dpfs run MNT -- ExampleProtectedDataObserver [SECONDS]
//
// Loads Documents/diary.txt (a complete file) into memory, then waits up to SECONDS
// (default 60) for notifications: on will-become-unavailable (`dpfs lock`, `dpfs
// restart`) it drops the cached text and says so; on did-become-available (`dpfs
// unlock`) it reloads it. It exits after the first reload or when the time is up.
import DataProtectionKit
import Foundation
import Synchronization

/// The decrypted diary, kept only while protected data is available.
final class DiaryCache: Sendable {
    private let text = Mutex<String?>(nil)
    let url: URL

    init(url: URL) { self.url = url }

    func load() -> Bool {
        guard let data = try? Data(contentsOf: url) else { return false }
        text.withLock { $0 = String(decoding: data, as: UTF8.self) }
        return true
    }

    func drop() { text.withLock { $0 = nil } }
    var isLoaded: Bool { text.withLock { $0 != nil } }
}

/// Runs until the first reload or `seconds`; the exit status (3: no reload in time).
func observe(seconds: Double) -> Int32 {
    guard let documents = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask).first else {
        return 1
    }
    let cache = DiaryCache(url: documents.appendingPathComponent("diary.txt"))
    let reloaded = DispatchSemaphore(value: 0)

    let center = NotificationCenter.default
    let willGo = center.addObserver(forName: UIApplication.protectedDataWillBecomeUnavailableNotification,
                                    object: nil, queue: nil) { _ in
        cache.drop()
        print("protected data will become unavailable: dropped in-memory secrets (loaded: \(cache.isLoaded))")
        fflush(nil)
    }
    let didCome = center.addObserver(forName: UIApplication.protectedDataDidBecomeAvailableNotification,
                                     object: nil, queue: nil) { _ in
        print("protected data available again: reloaded secrets: \(cache.load())")
        fflush(nil)
        reloaded.signal()
    }

    do {
        // Linux only: on iOS, UIKit delivers these notifications by itself.
        try ProtectedData.startObserving()
    } catch {
        FileHandle.standardError.write(Data("ExampleProtectedDataObserver: \(error)\n".utf8))
        return 1
    }
    print("loaded secrets: \(cache.load()); protected data available: \(UIApplication.shared.isProtectedDataAvailable)")
    print("observing")
    fflush(nil)
    let outcome = reloaded.wait(timeout: .now() + seconds)
    ProtectedData.stopObserving()
    center.removeObserver(willGo)
    center.removeObserver(didCome)
    return outcome == .success ? 0 : 3
}

exit(observe(seconds: CommandLine.arguments.dropFirst().first.flatMap(Double.init) ?? 60))
