// LAContext: evaluates a policy by asking the device's simulated user (dpfs biometry
// respond), and lends its success to keychain calls that pass it as
// kSecUseAuthenticationContext. Apple's calls, names and error codes; the state is
// the daemon's, so every process of a test sees the same enrollment.
import DPFSProtocol
import Foundation
import Synchronization

open class LAContext: NSObject, AuthenticationContextToken, @unchecked Sendable {
    // Every mutable property lives in `state`; that is what makes the class Sendable.
    private struct State {
        var biometryType: LABiometryType = .none
        var domainState: Data?
        var invalidated = false
        var reuseDuration: Double = 0
        var interactionNotAllowed = false
        var localizedFallbackTitle: String?
        var localizedCancelTitle: String?
        var localizedReason = ""
    }

    private let state = Mutex(State())
    public let dpfsAuthenticationToken = BiometryChannel.newToken()

    public override init() { super.init() }

    /// Face ID or Touch ID once canEvaluatePolicy has been called, .none before, as on iOS.
    open var biometryType: LABiometryType { state.withLock { $0.biometryType } }

    /// The enrollment's state after a biometric policy was checked or evaluated; it
    /// changes when the user re-enrolls (dpfs biometry reenroll).
    open var evaluatedPolicyDomainState: Data? { state.withLock { $0.domainState } }

    /// Kept (seconds, at most five minutes) and sent, but it spares no prompt: Apple
    /// reuses only a device unlock by Touch ID, and no biometry unlocks this device.
    open var touchIDAuthenticationAllowableReuseDuration: TimeInterval {
        get { state.withLock { $0.reuseDuration } }
        set { state.withLock { $0.reuseDuration = min(max(newValue, 0), LATouchIDAuthenticationMaximumAllowableReuseDuration) } }
    }

    /// When true, a policy that would have to ask fails with .notInteractive, and so
    /// does (errSecInteractionNotAllowed) a keychain call given this context as
    /// kSecUseAuthenticationContext, as kSecUseAuthenticationUIFail would.
    open var interactionNotAllowed: Bool {
        get { state.withLock { $0.interactionNotAllowed } }
        set { state.withLock { $0.interactionNotAllowed = newValue } }
    }

    public var dpfsInteractionNotAllowed: Bool { interactionNotAllowed }

    open var localizedFallbackTitle: String? {
        get { state.withLock { $0.localizedFallbackTitle } }
        set { state.withLock { $0.localizedFallbackTitle = newValue } }
    }

    open var localizedCancelTitle: String? {
        get { state.withLock { $0.localizedCancelTitle } }
        set { state.withLock { $0.localizedCancelTitle = newValue } }
    }

    open var localizedReason: String {
        get { state.withLock { $0.localizedReason } }
        set { state.withLock { $0.localizedReason = newValue } }
    }

    /// Whether `policy` can be evaluated now; otherwise false with an LAError in `error`
    /// (passcodeNotSet, biometryNotEnrolled, biometryLockout, biometryNotAvailable).
    open func canEvaluatePolicy(_ policy: LAPolicy, error: UnsafeMutablePointer<NSError?>?) -> Bool {
        if let failure = check(policy) {
            error?.pointee = failure.nsError
            return false
        }
        return true
    }

    /// Asks the simulated user; `reply` runs on another thread, as Apple's does.
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String,
                             reply: @escaping @Sendable (Bool, (any Error)?) -> Void) {
        // Read now, not on the thread: whether invalidate() came before or after this
        // call is the app's order, which the thread's start and the daemon may not see.
        let invalidatedBefore = state.withLock { $0.invalidated }
        do {
            try PosixThread.start(named: "LAContext.eval") { [self] in
                let failure = invalidatedBefore ? LAError(.invalidContext) : evaluate(policy, reason: localizedReason)
                reply(failure == nil, failure)
            }
        } catch {
            // No thread for it (the process at its thread limit): the reply still comes,
            // as a failure, rather than never.
            reply(false, LAError(.systemCancel, "LAContext could not start its evaluation: \(error)"))
        }
    }

    /// The async form: returns true, or throws an LAError.
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            evaluatePolicy(policy, localizedReason: localizedReason) { success, error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: success) }
            }
        }
    }

    /// Ends the context: an evaluation in progress (evaluatePolicy called before, its
    /// reply not yet given, whether or not the daemon has received it) fails at once
    /// with .appCancel, the daemon forgets what it proved, later calls fail with
    /// .invalidContext, and a keychain call given it is refused as by a context that
    /// authorizes nothing.
    open func invalidate() {
        let wasValid = state.withLock { state -> Bool in
            defer { state.invalidated = true }
            return !state.invalidated
        }
        if wasValid { _ = BiometryChannel.send(.invalidate(context: dpfsAuthenticationToken)) }
    }

    private func check(_ policy: LAPolicy) -> LAError? {
        if state.withLock({ $0.invalidated }) { return LAError(.invalidContext) }
        guard let device = BiometryChannel.send(.state) else {
            return LAError(.biometryNotAvailable, "No dpfs device answers (is DPFS_MOUNT set?).")
        }
        record(device)
        if !device.passcodeSet { return LAError(.passcodeNotSet) }
        guard policy == .deviceOwnerAuthenticationWithBiometrics else { return nil }
        if !device.enrolled { return LAError(.biometryNotEnrolled) }
        if device.lockedOut { return LAError(.biometryLockout) }
        return nil
    }

    /// An evaluation the app asked for while the context was valid: an invalidation
    /// from here on is the app cancelling it, whenever the daemon learns of it (its
    /// .invalidContext for this token can only come from that later invalidate()).
    private func evaluate(_ policy: LAPolicy, reason: String) -> LAError? {
        let (invalidated, reuse, interactive) = state.withLock {
            ($0.invalidated, $0.reuseDuration, !$0.interactionNotAllowed)
        }
        if invalidated { return LAError(.appCancel) }
        let answer = BiometryChannel.send(.evaluate(policy: policy.wire, context: dpfsAuthenticationToken,
                                                    reason: reason, reuse: reuse, interactive: interactive))
        if let answer { record(answer) }
        if state.withLock({ $0.invalidated }) { return LAError(.appCancel) }
        guard let device = answer else {
            return LAError(.biometryNotAvailable, "No dpfs device answers (is DPFS_MOUNT set?).")
        }
        guard let code = device.errorCode else { return nil }
        return LAError(LAError.Code(rawValue: code) ?? .authenticationFailed)
    }

    private func record(_ device: BiometryReply) {
        state.withLock { state in
            state.biometryType = LABiometryType(device.type)
            state.domainState = device.domainState.flatMap(Self.bytes(hex:))
        }
    }

    private static func bytes(hex: String) -> Data? {
        var bytes = Data()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}
