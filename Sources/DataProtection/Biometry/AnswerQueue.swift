// The answers a test queued for the simulated user's next prompts (dpfs biometry
// respond, DeviceControl), taken in order. A prompt with none queued waits, up to its
// deadline, for one to arrive.
import DPFSProtocol
import Foundation

enum QueuedAnswer: Sendable {
    case match, nomatch, cancel
    /// The passcode the user types, in locked memory until the prompt checks it.
    case passcode(SecureBuffer)
}

final class AnswerQueue: @unchecked Sendable {
    /// A bound on what a runaway test loop can queue.
    static let capacity = 10_000

    // Guards `answers`; @unchecked Sendable rests on touching them only under it.
    private let condition = NSCondition()
    private var answers: [QueuedAnswer] = []

    var count: Int {
        condition.lock(); defer { condition.unlock() }
        return answers.count
    }

    /// Appends `times` copies; false when that would pass the capacity.
    func append(_ answer: QueuedAnswer, times: Int) -> Bool {
        condition.lock(); defer { condition.unlock() }
        guard times >= 1, answers.count + times <= Self.capacity else { return false }
        answers += Array(repeating: answer, count: times)
        condition.broadcast()
        return true
    }

    /// The next answer, or nil when none came before `deadline`.
    func next(before deadline: Date) -> QueuedAnswer? {
        condition.lock(); defer { condition.unlock() }
        while answers.isEmpty {
            if !condition.wait(until: deadline) && answers.isEmpty { return nil }
        }
        return answers.removeFirst()
    }

    func removeAll() {
        condition.lock(); defer { condition.unlock() }
        for case .passcode(let secret) in answers { secret.wipe() }
        answers.removeAll()
    }
}
