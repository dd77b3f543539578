// When the kernel was last told a node's entry and attributes, so that readdirplus can
// leave out what it would only repeat. Each name readdirplus lists refreshes the
// kernel's entry and attributes of that node: for a node told moments ago and not
// changed since (ls -lR right after an extraction: every entry) that is a system call
// here and an update in the kernel per name, for nothing.
//
// Leaving a node out never serves it stale: the kernel keeps what it holds under its
// own timeouts and invalidations and asks (LOOKUP, GETATTR) once those lapse. So these
// times only decide speed; where a change is not noted here (one the kernel makes to
// its own copy), the cost is a request readdirplus would have spared.
import Glibc
import Synchronization

struct KernelView: ~Copyable {
    /// Seconds of the monotonic clock when the kernel got the node's entry, and its
    /// attributes (an entry carries both); 0: not since a change.
    private let entryTold = Atomic<UInt32>(0)
    private let attributesTold = Atomic<UInt32>(0)
    /// Half the timeouts the kernel is given (SandboxFileSystem.entryTimeout): what it
    /// was told this recently it surely still holds, unless it dropped it.
    private static let fresh: UInt32 = UInt32(SandboxFileSystem.entryTimeout / 2)

    func toldEntry() {
        let now = Self.now()
        entryTold.store(now, ordering: .relaxed)
        attributesTold.store(now, ordering: .relaxed)
    }

    func toldAttributes() { attributesTold.store(Self.now(), ordering: .relaxed) }

    /// A request that changes the node's attributes in the kernel (size, times, link
    /// count): the kernel marks its copy stale.
    func changed() { attributesTold.store(0, ordering: .relaxed) }

    /// A request after which the kernel drops the node's entry (a directory's mode
    /// change): it asks again before it goes into that directory.
    func entryDropped() { entryTold.store(0, ordering: .relaxed) }

    /// Whether the kernel holds the node's entry and attributes as last told.
    var isCurrent: Bool {
        let now = Self.now()
        let entry = entryTold.load(ordering: .relaxed), attributes = attributesTold.load(ordering: .relaxed)
        return entry != 0 && attributes != 0 && now &- entry < Self.fresh && now &- attributes < Self.fresh
    }

    private static func now() -> UInt32 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return UInt32(truncatingIfNeeded: time.tv_sec) | 1  // never 0, which means "not told"
    }
}
