// What a request that cannot be decoded is told. A body the reader refused (one over
// the limits a request is held to, WireValue.Limits.request, or bytes of no wire form)
// hears what was wrong with it, in words that quote none of its content; one that reads
// but has no request's shape gets the general answer, as DecodingError's text may
// quote the request's values.
import DPFSProtocol

enum MalformedRequest {
    /// The error reply's text for a body that `ControlCoding.decode` refused with `error`.
    static func message(for error: any Error) -> String {
        if let error = error as? FrameError, case .malformed = error { return error.description }
        return "malformed request: not a valid dpfs control message"
    }
}
