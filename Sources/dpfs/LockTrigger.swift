// The logind events that lock the device (dpfs mount --lock-on).

enum LockTrigger: String, CaseIterable, Sendable {
    case screenLock = "screen-lock"
    case suspend
    case logout

    struct UnknownWord: Error { let word: String }

    /// "screen-lock,suspend,logout" → the triggers, or the word it does not know.
    static func parse(_ list: String) -> Result<Set<LockTrigger>, UnknownWord> {
        var triggers = Set<LockTrigger>()
        for word in list.split(separator: ",", omittingEmptySubsequences: false) {
            guard let trigger = LockTrigger(rawValue: String(word)) else { return .failure(UnknownWord(word: String(word))) }
            triggers.insert(trigger)
        }
        return .success(triggers)
    }
}
