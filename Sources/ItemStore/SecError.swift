// A keychain call's failure inside the store, as the OSStatus it answers.
import DPFSProtocol

/// A failed keychain call inside the store: the status it answers, and for the
/// caller's benefit a reason when the status alone would leave them guessing.
struct SecError: Error {
    let status: Int32
    let reason: String?

    init(_ status: Int32, _ reason: String? = nil) {
        self.status = status
        self.reason = reason
    }
}
