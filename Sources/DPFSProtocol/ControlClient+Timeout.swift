// For library callers that must never hang on a stuck daemon: a deadline on each read
// and write, and a way for another thread to end a blocking event stream.
import Glibc

extension ControlClient {
    /// Every later send fails after `seconds` without progress, and a receive once no
    /// reply has begun within `seconds` or one that began is not whole `seconds` later
    /// (the frame reader then throws FrameError.io(EAGAIN)); 0 waits forever.
    public func setTimeout(seconds: Double) {
        let whole = seconds.rounded(.down)
        var value = timeval(tv_sec: Int(whole), tv_usec: Int((seconds - whole) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Shuts the connection down: a `stream` blocked on another thread returns.
    public func hangUp() {
        shutdown(fd, Int32(SHUT_RDWR))
    }
}
