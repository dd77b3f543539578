// Bounded waits for long-lived clients (the Security library keeps connections open):
// a daemon that stops answering turns into an error after `seconds`, never a hang.
import Glibc

extension ControlClient {
    /// Every later send and receive on this connection fails with EAGAIN after `seconds`.
    public func setTimeouts(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        let size = socklen_t(MemoryLayout<timeval>.size)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, size)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, size)
    }
}
