// The answers a test queued for the simulated user's next prompts (dpfs biometry
// respond, DeviceControl), taken in order, and the one screen prompts take turns on.
// A prompt with none queued waits, up to its deadline, for one to arrive; a restart
// or the prompt's own cancellation ends the wait at once, without taking an answer.
import DPFSProtocol
import Foundation

enum QueuedAnswer: Sendable {
    case match, nomatch, cancel
    /// The passcode the user types, in locked memory until the prompt checks it.
    case passcode(SecureBuffer)
}

/// Why a prompt ended before the user answered it.
enum PromptEnd: Sendable, Equatable {
    /// The device restarted.
    case restart
    /// The app invalidated the LAContext the prompt was for.
    case appCancel
}

/// How waiting for the screen or for an answer ended.
enum PromptWait<Value> {
    case got(Value)
    case timedOut
    case ended(PromptEnd)
}

final class AnswerQueue: @unchecked Sendable {
    /// A bound on what a runaway test loop can queue.
    static let capacity = 10_000

    // Guards every stored property; @unchecked Sendable rests on touching them only under it.
    private let condition = NSCondition()
    private var answers: [QueuedAnswer] = []
    private var screenTaken = false
    private var restarts: UInt64 = 0
    private var prompts = 0

    var count: Int {
        condition.lock(); defer { condition.unlock() }
        return answers.count
    }

    /// Prompts on screen or waiting for it.
    var promptCount: Int {
        condition.lock(); defer { condition.unlock() }
        return prompts
    }

    /// Restarts so far: a prompt that began at another count was ended by a restart.
    var restartCount: UInt64 {
        condition.lock(); defer { condition.unlock() }
        return restarts
    }

    /// Appends `times` copies; false when that would pass the capacity.
    func append(_ answer: QueuedAnswer, times: Int) -> Bool {
        condition.lock(); defer { condition.unlock() }
        guard times >= 1, answers.count + times <= Self.capacity else { return false }
        answers += Array(repeating: answer, count: times)
        condition.broadcast()
        return true
    }

    /// Puts a prompt begun at `restartCount` `since` on screen once no other is, before `deadline`.
    /// Counted among the prompts until it leaves the screen or fails to get on it.
    func takeScreen(before deadline: Date, since: UInt64, unless cancelled: () -> Bool) -> PromptWait<Void> {
        condition.lock()
        prompts += 1
        condition.unlock()
        let result: PromptWait<Void> = wait(before: deadline, since: since, unless: cancelled) {
            guard !screenTaken else { return nil }
            screenTaken = true
            return ()
        }
        if case .got = result { return result }
        condition.lock()
        prompts -= 1
        condition.unlock()
        return result
    }

    func leaveScreen() {
        condition.lock(); defer { condition.unlock() }
        screenTaken = false
        prompts -= 1
        condition.broadcast()
    }

    /// The next answer for the prompt on screen.
    func next(before deadline: Date, since: UInt64, unless cancelled: () -> Bool) -> PromptWait<QueuedAnswer> {
        wait(before: deadline, since: since, unless: cancelled) {
            answers.isEmpty ? nil : answers.removeFirst()
        }
    }

    /// Has every waiting prompt look again whether it was cancelled.
    func wakePrompts() {
        condition.lock(); defer { condition.unlock() }
        condition.broadcast()
    }

    /// A restart: every prompt ends, and the queued answers are dropped.
    func restart() {
        condition.lock(); defer { condition.unlock() }
        restarts &+= 1
        dropAnswers()
        condition.broadcast()
    }

    func removeAll() {
        condition.lock(); defer { condition.unlock() }
        dropAnswers()
    }

    private func dropAnswers() {
        for case .passcode(let secret) in answers { secret.wipe() }
        answers.removeAll()
    }

    /// Under the lock: an end comes before anything `take` could take.
    private func wait<Value>(before deadline: Date, since: UInt64, unless cancelled: () -> Bool,
                             take: () -> Value?) -> PromptWait<Value> {
        condition.lock(); defer { condition.unlock() }
        while true {
            if restarts != since { return .ended(.restart) }
            if cancelled() { return .ended(.appCancel) }
            if let value = take() { return .got(value) }
            if !condition.wait(until: deadline) && Date() >= deadline {
                if restarts != since { return .ended(.restart) }
                if cancelled() { return .ended(.appCancel) }
                return take().map { .got($0) } ?? .timedOut
            }
        }
    }
}
