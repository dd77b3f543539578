// What waits on a socket, told without reading it, so that a thread serving many
// connections reads only a frame that is all there: reading one that is still
// arriving would hold the thread for as long as its sender takes.
import CLinux
import Glibc

public enum FrameArrival: Equatable {
    /// A whole frame, or a header that fails its checks: reading it takes no wait.
    case whole
    /// Part of a frame: the rest may take the sender any time.
    case partial
    /// Nothing (a wake-up with no data).
    case nothing
    /// The peer has hung up, or the socket failed.
    case closed

    /// What waits on `fd`, a stream socket.
    public static func peek(_ fd: Int32) -> FrameArrival {
        var header = [UInt8](repeating: 0, count: ControlProtocol.headerSize)
        let n = recv(fd, &header, header.count, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        if n == 0 { return .closed }
        if n < 0 { return errno == EAGAIN || errno == EINTR ? .nothing : .closed }
        if n < header.count { return .partial }
        guard let lengths = try? Frame<LockedSecret>.lengths(inHeader: header) else { return .whole }
        return Int(dpfs_queued_bytes(fd)) >= header.count + lengths.body + lengths.secrets ? .whole : .partial
    }
}
