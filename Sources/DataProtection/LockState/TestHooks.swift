// Knobs that exist only so tests need not wait an hour. They are compiled in only
// when DPFS_TEST_HOOKS is defined, which Package.swift does for debug builds alone:
// a release binary has none of this code, and DPFS_TEST_DELAY_SCALE means nothing
// to it (test hooks do not exist in a release build).
import Foundation

/// The test knobs a device is booted with; empty in a release build.
public struct TestHooks: Sendable {
    #if DPFS_TEST_HOOKS
    /// A factor on the waits after failed passcode attempts (0.01: 1 min → 0.6 s).
    public var delayScale: Double
    /// Runs once a passcode is verified (an unlock's, or a prompt's), before its
    /// success is saved and before an unlock restores the keys: where a lock, or a
    /// directory class change, can come while the passcode is checked.
    public var passcodeChecked: (@Sendable () -> Void)?

    public init(delayScale: Double = 1, passcodeChecked: (@Sendable () -> Void)? = nil) {
        self.delayScale = delayScale
        self.passcodeChecked = passcodeChecked
    }

    /// The knobs named in the daemon's environment (dpfs(1), ENVIRONMENT).
    public static func fromEnvironment() -> TestHooks {
        let environment = ProcessInfo.processInfo.environment
        let scale = environment["DPFS_TEST_DELAY_SCALE"].flatMap(Double.init)
        let hold = environment["DPFS_TEST_HOLD_UNLOCK"].map { path in { @Sendable in waitForFile(path) } }
        return TestHooks(delayScale: scale ?? 1, passcodeChecked: hold)
    }

    /// Makes PATH.held, then waits until `path` exists, 60 s at most.
    private static func waitForFile(_ path: String) {
        _ = FileManager.default.createFile(atPath: path + ".held", contents: nil)
        let deadline = ContinuousClock.now + .seconds(60)
        while access(path, F_OK) != 0 && ContinuousClock.now < deadline { usleep(10_000) }
    }

    /// Shortens the wait the policy just imposed.
    func scaleWait(_ policy: inout PasscodePolicy, now: Date) {
        guard let retryAfter = policy.retryAfter, delayScale != 1 else { return }
        let scaled = (retryAfter - now.timeIntervalSince1970) * max(delayScale, 0)
        policy.retryAfter = scaled > 0 ? now.timeIntervalSince1970 + scaled : nil
    }
    #else
    public init() {}
    #endif
}

extension TestHooks {
    /// A crash at an exact step: in a debug build, the process kills itself (SIGKILL)
    /// where the step named in DPFS_TEST_KILL_AT is reached. Nothing in a release build.
    /// Whether DPFS_TEST_KILL_AT names `step` (a debug build's): for a kill point that
    /// must first leave a torn write behind. Always false in a release build.
    @inlinable
    public static func killPointReached(_ step: StaticString) -> Bool {
        #if DPFS_TEST_HOOKS
        if let wanted = getenv("DPFS_TEST_KILL_AT"), strcmp(wanted, step.utf8Start) == 0 { return true }
        #endif
        return false
    }

    @inlinable
    public static func killPoint(_ step: StaticString) {
        #if DPFS_TEST_HOOKS
        if let wanted = getenv("DPFS_TEST_KILL_AT"), strcmp(wanted, step.utf8Start) == 0 { kill(getpid(), SIGKILL) }
        #endif
    }
}
