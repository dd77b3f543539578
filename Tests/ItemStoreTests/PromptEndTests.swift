// Prompts that end before the user answers: an LAContext invalidated while its prompt
// waits, and a restart. Either ends the prompt at once without taking an answer, and
// an invalidated context proves nothing afterwards.
import DPFSProtocol
import DataProtection
import Foundation
import Synchronization
import Testing
@testable import ItemStore

@Suite struct PromptEndTests {
    /// Longer than any wait these tests allow, so that a prompt ending by its timeout fails them.
    static let promptTimeout: Double = 9
    static let token = String(repeating: "9c", count: 16)

    /// Runs `body` on a thread of its own; `wait` returns its result, or nil after 30 s.
    final class Background<Value: Sendable>: Sendable {
        private let result = Mutex<Value?>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(_ body: @escaping @Sendable () -> Value) {
            Thread { [self] in
                let value = body()
                result.withLock { $0 = value }
                done.signal()
            }.start()
        }

        func wait() -> Value? {
            guard done.wait(timeout: .now() + 30) == .success else { return nil }
            return result.withLock { $0 }
        }
    }

    func waitForPrompts(_ user: SimulatedUser, _ count: Int) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if user.state().prompts == count { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }

    func device() throws -> TestDevice {
        let t = try TestDevice()
        try t.store.user.enroll(type: .faceID)
        try t.store.user.setPromptTimeout(Self.promptTimeout)
        return t
    }

    static func find(_ store: ItemStore, _ service: String, _ interaction: KeychainAuthentication.Interaction,
                     context: String? = nil) -> KeychainResponse {
        var request = KeychainRequest(operation: .find, attributes: ["service": service], returning: "data")
        request.authentication = KeychainAuthentication(interaction: interaction, context: context)
        return store.perform(request)
    }

    @Test func invalidatingAContextEndsItsEvaluationAtOnce() throws {
        let t = try device()
        let user = t.store.user
        let current = String(AccessControlFlags.biometryCurrentSet.rawValue)
        #expect(t.add(["service": "bank", "accessControl": current]).status == 0)
        let started = Date()
        let evaluation = Background { user.evaluate(.biometrics, context: Self.token, reuse: 0, interactive: true) }
        #expect(waitForPrompts(user, 1))
        user.invalidate(context: Self.token)
        #expect(evaluation.wait() == .appCancelled)
        #expect(Date().timeIntervalSince(started) < Self.promptTimeout - 1, "ended by the invalidation, not by the timeout")
        #expect(user.state().prompts == 0)

        try user.respond(.match, times: 1, passcode: nil)
        #expect(Self.find(t.store, "bank", .fail, context: Self.token).status == SecStatus.interactionNotAllowed)
        #expect(Self.find(t.store, "bank", .allow, context: Self.token).status == SecStatus.authFailed,
                "an invalidated context authorizes nothing, and asks for nothing")
        #expect(user.evaluate(.biometrics, context: Self.token, reuse: 0, interactive: true) == .contextInvalidated)
        #expect(user.state().queued == 1, "the match waits for the next prompt")
        #expect(Self.find(t.store, "bank", .allow).status == 0)
    }

    @Test func invalidatingAContextEndsAKeychainPromptMadeWithIt() throws {
        let t = try device()
        let user = t.store.user
        let any = String(AccessControlFlags.biometryAny.rawValue)
        #expect(t.add(["service": "any", "accessControl": any]).status == 0)
        let store = t.store
        let started = Date()
        let reading = Background { Self.find(store, "any", .allow, context: Self.token).status }
        #expect(waitForPrompts(user, 1))
        user.invalidate(context: Self.token)
        #expect(reading.wait() == SecStatus.userCanceled)
        #expect(Date().timeIntervalSince(started) < Self.promptTimeout - 1, "ended by the invalidation, not by the timeout")
    }

    @Test func aRestartEndsEveryPromptWithoutTakingAnAnswer() throws {
        let t = try device()
        let user = t.store.user
        let any = String(AccessControlFlags.biometryAny.rawValue)
        #expect(t.add(["service": "unlocked", "accessControl": any]).status == 0)
        #expect(t.add(["service": "always", "accessControl": any, "accessible": "Always"]).status == 0)
        let store = t.store
        let started = Date()
        // One prompt on screen, two behind it.
        let unlocked = Background { Self.find(store, "unlocked", .allow).status }
        #expect(waitForPrompts(user, 1))
        let always = Background { Self.find(store, "always", .allow).status }
        let evaluation = Background { user.evaluate(.biometrics, context: Self.token, reuse: 0, interactive: true) }
        #expect(waitForPrompts(user, 3))
        t.restart()
        try user.respond(.match, times: 1, passcode: nil)
        #expect(unlocked.wait() == SecStatus.interactionNotAllowed, "its class key went with the restart")
        #expect(always.wait() == SecStatus.userCanceled)
        #expect(evaluation.wait() == .systemCancelled)
        #expect(Date().timeIntervalSince(started) < Self.promptTimeout - 1, "ended by the restart, not by the timeout")
        #expect(user.state().queued == 1, "the match answered after the restart waits for the next prompt")
        #expect(user.state().prompts == 0)
    }
}
