// For library callers that must never hang on a stuck daemon: a deadline on each read
// and write, and a way for another thread to end a blocking event stream.
import Glibc

extension ControlClient {
    /// Every later send fails after `seconds` without progress, and a receive once no
    /// reply has begun within `seconds` or one that began is not whole `seconds` later
    /// (the frame reader then throws FrameError.io(EAGAIN)); 0 waits forever.
    public func setTimeout(seconds: Double) {
        setSocketTimeout(fd, seconds: seconds)
    }

    /// Shuts the connection down: a `stream` blocked on another thread returns.
    public func hangUp() {
        shutdown(fd, Int32(SHUT_RDWR))
    }
}

/// Sets `fd`'s receive and send timeouts (0: none); false when they cannot be set.
@discardableResult
func setSocketTimeout(_ fd: Int32, seconds: Double) -> Bool {
    let whole = seconds.rounded(.down)
    var value = timeval(tv_sec: Int(whole), tv_usec: Int((seconds - whole) * 1_000_000))
    // Under a microsecond would read as none at all.
    if seconds > 0 && value.tv_sec == 0 && value.tv_usec == 0 { value.tv_usec = 1 }
    let size = socklen_t(MemoryLayout<timeval>.size)
    return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, size) == 0
        && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, size) == 0
}
