// Keychain calls per second: through the Security library (a Unix-socket round trip to
// a mounted device's daemon) against the same ItemStore called in this process, one
// thread and eight. It mounts its own device with the dpfs binary ($DPFS, else the
// package's .build/release/dpfs) and unmounts it at the end, or when interrupted; its
// daemon also stops when the bench dies without a word (kill -9).
// Run: Scripts/bench-micro Keychain   (or swift run -c release KeychainBench in Benchmarks/)
import DPFSProtocol
import DataProtection
import Foundation
import ItemStore
import Security
import Synchronization

let singleThreadCalls = 4000
let threads = 8
let callsPerThread = 1000

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
let dpfs = ProcessInfo.processInfo.environment["DPFS"] ?? root.appendingPathComponent(".build/release/dpfs").path
let work: URL = {
    WorkDirectory.removeAbandoned()
    return WorkDirectory.make()
}()
let mountpoint = work.appendingPathComponent("mnt").path
let passcodeFile = work.appendingPathComponent("pass.txt").path

@discardableResult
func run(_ arguments: String...) -> Int32 {
    var pid: pid_t = 0
    let argv = ([dpfs] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, dpfs, nil, nil, argv, environ) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return status
}

/// Set once the mount and the work directory are gone (or going, under the lock).
let cleanedUp = Mutex(false)

/// Unmounts and removes the work directory, once, whoever asks first: the end, a
/// failure or a signal; a second caller waits until it is done.
func cleanUp() {
    cleanedUp.withLock { done in
        guard !done else { return }
        done = true
        run("unmount", mountpoint)
        try? FileManager.default.removeItem(at: work)
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("KeychainBench: \(message)\n".utf8))
    cleanUp()
    exit(1)
}

/// Whether this process ignores `signal` (as under nohup, or as a script's background
/// job does SIGINT): it is left so.
func isIgnored(_ signal: Int32) -> Bool {
    var current = sigaction()
    guard sigaction(signal, nil, &current) == 0 else { return false }
    return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == 1  // SIG_IGN
}

// Ctrl-C, SIGTERM or a closed terminal: the mount and the work directory go, as at
// the end. The handlers run on a queue of their own, not in signal context.
let stopSignals = [SIGINT, SIGTERM, SIGHUP].filter { !isIgnored($0) }.map { caught in
    signal(caught, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: caught, queue: .global())
    source.setEventHandler {
        cleanUp()
        _exit(128 + caught)
    }
    source.resume()
    return source
}

/// Calls per second of `body(thread, index)` on `threadCount` threads of its own, all
/// started at once. Not DispatchQueue.concurrentPerform: on Linux it runs its
/// iterations on at most as many threads as there are CPUs, so "8 threads" were 2.
func rate(threadCount: Int, calls: Int, _ body: @escaping @Sendable (Int, Int) -> Bool) -> Double {
    let run = BenchRun()
    for thread in 0..<threadCount {
        Thread {
            run.ready.signal()
            run.go.wait()
            for index in 0..<calls where !body(thread, index) { run.failures.add(1, ordering: .relaxed) }
            run.done.signal()
        }.start()
    }
    for _ in 0..<threadCount { run.ready.wait() }
    let start = ContinuousClock.now
    for _ in 0..<threadCount { run.go.signal() }
    for _ in 0..<threadCount { run.done.wait() }
    let seconds = (ContinuousClock.now - start) / .seconds(1)
    let failures = run.failures.load(ordering: .relaxed)
    if failures > 0 { fail("\(failures) calls failed") }
    return Double(threadCount * calls) / seconds
}

/// What the threads of one `rate` share: a barrier (every thread is up before any
/// call starts, so all of them run at once) and their failures.
final class BenchRun: Sendable {
    let ready = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    let failures = Atomic<Int>(0)
}

// --- devices: one mounted (socket), one opened here (in-process) ----------------------
guard (try? FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)) != nil else {
    fail("cannot create \(mountpoint)")
}
_ = FileManager.default.createFile(atPath: passcodeFile, contents: Data("1234\n".utf8), attributes: [.posixPermissions: 0o600])
let mountedDevice = work.appendingPathComponent("mounted").path
let localDevice = work.appendingPathComponent("local").path
let secrets = "file:" + work.appendingPathComponent("secrets").path
guard run("init", mountedDevice, "--passcode-file", passcodeFile, "--secret-store", secrets, "--create") == 0,
      run("init", localDevice, "--passcode-file", passcodeFile, "--secret-store", secrets, "--create") == 0 else { fail("dpfs init failed (\(dpfs))") }
// Killed outright (kill -9), the bench unmounts nothing itself: --end-with has the
// daemon watch this process and, once it is gone, stop as on SIGTERM (its device
// restarted, then unmounted), as for dpfs restore's own mount.
guard run("mount", mountedDevice, mountpoint, "--end-with", String(getpid())) == 0 else { fail("dpfs mount failed") }
guard run("unlock", mountpoint, "--passcode-file", passcodeFile) == 0 else { fail("dpfs unlock failed") }
setenv("DPFS_MOUNT", mountpoint, 1)

/// The same store the daemon opens, opened here; unlocked as `dpfs unlock` does.
func openLocalStore() -> ItemStore {
    do {
        let directory = DeviceDirectory(localDevice)
        let device = try LockStateManager(directory: directory, gracePeriod: 0)
        try Array("1234".utf8).withUnsafeBytes { try device.unlock(passcode: SecureBuffer(copying: $0)) }
        return try ItemStore(path: directory.itemStorePath, device: device)
    } catch {
        fail("cannot open the in-process store (is \(dpfs) built from this tree?): \(error)")
    }
}
let store = openLocalStore()

// --- the calls ------------------------------------------------------------------------
@Sendable func secAdd(_ tag: String, _ thread: Int, _ index: Int) -> Bool {
    let item: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: tag,
                               kSecAttrAccount as String: "\(thread)-\(index)", kSecValueData as String: Data("secret".utf8)]
    return SecItemAdd(item as CFDictionary, nil) == errSecSuccess
}

@Sendable func secFind(_ tag: String, _ thread: Int, _ index: Int) -> Bool {
    let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: tag,
                                kSecAttrAccount as String: "\(thread)-\(index)", kSecReturnData as String: true]
    var result: CFTypeRef?
    return SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess && result is Data
}

@Sendable func storeAdd(_ tag: String, _ thread: Int, _ index: Int) -> Bool {
    store.perform(KeychainRequest(operation: .add, attributes: ["class": "genp", "service": tag, "account": "\(thread)-\(index)"],
                                  data: Data("secret".utf8))).status == 0
}

@Sendable func storeFind(_ tag: String, _ thread: Int, _ index: Int) -> Bool {
    store.perform(KeychainRequest(operation: .find, attributes: ["class": "genp", "service": tag, "account": "\(thread)-\(index)"],
                                  returning: "data")).items.first?.data != nil
}

func column(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }

func line(_ what: String, _ socket: Double, _ local: Double) {
    print(column(what, 18) + String(format: "%8.0f/s %7.1f µs   %8.0f/s %7.1f µs   %5.1fx",
                                     socket, 1e6 / socket, local, 1e6 / local, local / socket))
}

print(column("keychain call", 18) + "  Security (socket)      ItemStore in-process    ratio")
line("add, 1 thread", rate(threadCount: 1, calls: singleThreadCalls) { secAdd("one", $0, $1) },
     rate(threadCount: 1, calls: singleThreadCalls) { storeAdd("one", $0, $1) })
let socketFind = rate(threadCount: 1, calls: singleThreadCalls) { secFind("one", $0, $1) }
line("find, 1 thread", socketFind, rate(threadCount: 1, calls: singleThreadCalls) { storeFind("one", $0, $1) })
line("add, \(threads) threads", rate(threadCount: threads, calls: callsPerThread) { secAdd("many", $0, $1) },
     rate(threadCount: threads, calls: callsPerThread) { storeAdd("many", $0, $1) })
let socketFinds = rate(threadCount: threads, calls: callsPerThread) { secFind("many", $0, $1) }
line("find, \(threads) threads", socketFinds, rate(threadCount: threads, calls: callsPerThread) { storeFind("many", $0, $1) })
print(column("find, \(threads) ÷ 1 thread", 18) + String(format: "%8.2fx through the socket", socketFinds / socketFind))

// `KeychainBench --loop THREADS SECONDS` makes socket finds on THREADS threads for about
// SECONDS, for a profiler to watch (perf record -a), then goes on as usual.
if let at = CommandLine.arguments.firstIndex(of: "--loop"), at + 2 < CommandLine.arguments.count,
   let loopThreads = Int(CommandLine.arguments[at + 1]), let seconds = Double(CommandLine.arguments[at + 2]) {
    let perThread = max(1, Int(seconds * 14_000) / loopThreads)
    let found = rate(threadCount: loopThreads, calls: perThread) { secFind("many", $0 % threads, $1 % callsPerThread) }
    print(String(format: "loop: %d threads, %.0f finds/s", loopThreads, found))
}

// On a shared machine one round says little: `KeychainBench --rounds N` then alternates
// finds with 1 and 8 threads, in-process and through the socket, N times over the
// items added above, and gives the medians and ranges.
if let at = CommandLine.arguments.firstIndex(of: "--rounds"), at + 1 < CommandLine.arguments.count,
   let rounds = Int(CommandLine.arguments[at + 1]), rounds > 0 {
    var local1: [Double] = [], local8: [Double] = [], socket1: [Double] = [], socket8: [Double] = []
    for _ in 0..<rounds {
        local1.append(rate(threadCount: 1, calls: 2 * callsPerThread) { storeFind("many", $0 % threads, $1 % callsPerThread) })
        local8.append(rate(threadCount: threads, calls: callsPerThread) { storeFind("many", $0, $1) })
        socket1.append(rate(threadCount: 1, calls: 2 * callsPerThread) { secFind("many", $0 % threads, $1 % callsPerThread) })
        socket8.append(rate(threadCount: threads, calls: callsPerThread) { secFind("many", $0, $1) })
    }
    func spread(_ values: [Double], _ format: String = "%.0f/s") -> String {
        let sorted = values.sorted()
        return String(format: "\(format) (\(format)–\(format))", sorted[sorted.count / 2], sorted[0], sorted[sorted.count - 1])
    }
    func ratios(_ over: [Double], _ under: [Double]) -> String { spread(zip(over, under).map { $0 / $1 }, "%.2fx") }
    print("finds over \(rounds) rounds: median (range)")
    print("  in-process  1 thread \(spread(local1)), \(threads) threads \(spread(local8))")
    print("  socket      1 thread \(spread(socket1)), \(threads) threads \(spread(socket8))")
    print("  socket \(threads) ÷ 1 thread: \(ratios(socket8, socket1))")
    print("  1 thread, socket time ÷ in-process time: \(ratios(local1, socket1))")
}

// Where the socket's time goes, in part: a round trip that does no keychain work,
nonisolated(unsafe) let statusClient: ControlClient
do { statusClient = try ControlClient(mountpoint: mountpoint) } catch { fail("cannot connect: \(error)") }
let statusRate = rate(threadCount: 1, calls: singleThreadCalls) { _, _ in (try? statusClient.send(.status)) != nil }
print(column("status round trip", 18) + String(format: "%8.0f/s %7.1f µs", statusRate, 1e6 / statusRate))

// and the body of one call's request and reply, encoded and decoded once each, as
// client and daemon do: in the protocol's wire form, and in the JSON it replaced.
let sampleReply = ControlReply(ok: true, keychain: KeychainResponse(status: 0, items: [.init(data: Data("secret".utf8))]))
@Sendable func sampleRequest(_ index: Int) -> ControlRequest {
    .keychain(KeychainRequest(operation: .find, attributes: ["class": "genp", "service": "one", "account": "0-\(index)"],
                              returning: "data"))
}
let wireRate = rate(threadCount: 1, calls: singleThreadCalls) { _, index in
    guard let request = try? ControlCoding.encode(sampleRequest(index)),
          let reply = try? ControlCoding.encode(sampleReply) else { return false }
    return (try? ControlCoding.decode(ControlRequest.self, request)) != nil
        && (try? ControlCoding.decode(ControlReply.self, reply)) != nil
}
let jsonRate = rate(threadCount: 1, calls: singleThreadCalls) { _, index in
    guard let request = try? JSONEncoder().encode(sampleRequest(index)),
          let reply = try? JSONEncoder().encode(sampleReply) else { return false }
    return (try? JSONDecoder().decode(ControlRequest.self, from: request)) != nil
        && (try? JSONDecoder().decode(ControlReply.self, from: reply)) != nil
}
print(column("body of one call", 18) + String(format: "%8.0f/s %7.1f µs   JSON: %8.0f/s %7.1f µs   %5.1fx",
                                               wireRate, 1e6 / wireRate, jsonRate, 1e6 / jsonRate, wireRate / jsonRate))

cleanUp()
