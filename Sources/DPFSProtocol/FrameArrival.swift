// What waits on a socket, told without reading it, so that a thread serving many
// connections reads only a frame that is all there: reading one that is still
// arriving would hold the thread for as long as its sender takes.
import CLinux
import Glibc

public enum FrameArrival: Equatable {
    /// A whole frame, with its lengths; or a header that fails its checks (nil):
    /// reading it takes no wait.
    case whole(FrameLengths?)
    /// Part of a frame: the rest may take the sender any time.
    case partial
    /// Nothing (a wake-up with no data).
    case nothing
    /// The peer has hung up, or the socket failed.
    case closed

    /// Frames up to this size are told whole or partial by the peek alone; a larger one
    /// asks the kernel how much is queued.
    public static let peekSize = 1024

    /// What waits on `fd`, a stream socket, peeked into `scratch` (at least `peekSize`
    /// bytes). A peek may copy a frame's secrets (a passcode), so `scratch` is locked
    /// memory, and it is wiped again once it may have held any.
    public static func peek(_ fd: Int32, into scratch: LockedSecret) -> FrameArrival {
        let buffer = scratch.mutableBytes
        let n = recv(fd, buffer.baseAddress, min(buffer.count, peekSize), Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        if n == 0 { return .closed }
        if n < 0 { return errno == EAGAIN || errno == EINTR ? .nothing : .closed }
        if n < ControlProtocol.headerSize { return .partial }
        guard let lengths = try? FrameLengths(header: UnsafeRawBufferPointer(rebasing: buffer[..<n])) else {
            // Whatever the bad header claims, the bytes after it may be a secret.
            scratch.wipe()
            return .whole(nil)
        }
        if lengths.secrets > 0 && n > ControlProtocol.headerSize + lengths.body { scratch.wipe() }
        let queued = n >= lengths.total ? n : Int(dpfs_queued_bytes(fd))
        return queued >= lengths.total ? .whole(lengths) : .partial
    }
}
