// How much room the backing filesystem has, for the writes that append without
// reserving space first (BlockIO.writeBlocks). One fstatfs answers for the writes of
// the next 50 ms, less what they take, so an untar asks once every 50 ms rather than
// once per file. The margin (256 MiB) is far more than those writes and everyone
// else's could use in that time; near it, every write asks again and reserves.
import Glibc
import Synchronization

public enum FreeSpace {
    static let margin = 256 << 20
    static let answerLifetime: UInt64 = 50_000_000  // ns

    private struct Answer {
        var takenAt: UInt64 = 0
        var room = 0
    }
    private static let last = Mutex(Answer())

    /// Whether the filesystem of `fd` has `bytes` free and the margin besides; counts
    /// `bytes` as taken when it has.
    public static func hasRoom(_ fd: Int32, for bytes: Int) -> Bool {
        let needed = max(bytes, 0)
        let now = monotonicNow()
        let cached = last.withLock { answer -> Bool in
            guard now &- answer.takenAt < answerLifetime, answer.room - needed > margin else { return false }
            answer.room -= needed
            return true
        }
        if cached { return true }
        var st = statvfs()
        guard fstatvfs(fd, &st) == 0 else { return false }
        let room = Int(clamping: UInt64(st.f_bavail) &* UInt64(st.f_frsize))
        last.withLock { $0 = Answer(takenAt: now, room: room - needed) }
        return room - needed > margin
    }

    private static func monotonicNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
