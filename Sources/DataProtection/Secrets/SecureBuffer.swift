// Owns secret bytes: allocated by libsodium in locked, guarded pages (small ones in a
// shared locked arena, below) and zeroed on wipe.
// Secrets in dpfs never live in Swift Array, Data or String; they live here.
import CSodium
import DPFSProtocol
import Glibc

public final class SecureBuffer: AllocatedSecret, @unchecked Sendable {
    // @unchecked: the owner of a SecureBuffer serialises access to its bytes
    // (a Mutex in the key ring, the readers-writer lock of an open file).
    public let count: Int
    private let base: UnsafeMutableRawPointer
    public private(set) var isWiped = false

    /// Whether the bytes are a slot of the small-secret arena rather than their own
    /// sodium_malloc allocation.
    private let inArena: Bool

    public required init(count: Int) {
        precondition(Sodium.ready, "libsodium failed to initialise")
        if count <= SmallSecretArena.slotSize, let slot = SmallSecretArena.shared.take() {
            self.base = slot
            self.inArena = true
        } else {
            guard let memory = sodium_malloc(max(count, 1)) else {
                fatalError("sodium_malloc failed: out of locked memory")
            }
            self.base = memory
            self.inArena = false
        }
        self.count = count
        sodium_memzero(base, max(count, 1))
    }

    /// A new buffer filled with random bytes.
    public static func random(count: Int) -> SecureBuffer {
        let buffer = SecureBuffer(count: count)
        Sodium.fillRandom(buffer.mutableBytes)
        return buffer
    }

    /// A copy of `bytes` in locked memory.
    public convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count)
        if let source = bytes.baseAddress, bytes.count > 0 { memcpy(base, source, bytes.count) }
    }

    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
    public var mutableBytes: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: base, count: count)
    }
    public var pointer: UnsafePointer<UInt8> { UnsafePointer(base.assumingMemoryBound(to: UInt8.self)) }

    /// Zeroes the secret; the buffer stays allocated until released.
    public func wipe() {
        sodium_memzero(base, max(count, 1))
        isWiped = true
    }

    deinit {
        if inArena {
            SmallSecretArena.shared.give(base)  // zeroes the slot first
        } else {
            sodium_free(base)  // sodium_free zeroes before unlocking and unmapping
        }
    }
}

/// Locked memory for small secrets (keys: at most 64 bytes), carved out of 64 KiB
/// sodium_malloc regions: a file key per open file would otherwise cost a mapping of
/// its own, each allocation and free about nine system calls (mmap, mlock, mprotect
/// of two guard pages, …) and, in a threaded daemon, TLB shootdowns on every core.
/// A region is locked, guarded at both ends and never unmapped; a free slot is always
/// zero (it is zeroed when given back).
final class SmallSecretArena: @unchecked Sendable {
    // @unchecked: `free` and `regions` are guarded by `mutex`.
    static let shared = SmallSecretArena()
    static let slotSize = 64
    static let regionSize = 65536

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var free: [UnsafeMutableRawPointer] = []

    private init() { pthread_mutex_init(mutex, nil) }

    /// A zeroed slot, or nil when no more locked memory can be had.
    func take() -> UnsafeMutableRawPointer? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if free.isEmpty {
            guard let region = sodium_malloc(Self.regionSize) else { return nil }
            sodium_memzero(region, Self.regionSize)
            let slots = Self.regionSize / Self.slotSize
            free.reserveCapacity(free.count + slots)
            for index in stride(from: slots - 1, through: 0, by: -1) {
                free.append(region + index * Self.slotSize)
            }
        }
        return free.popLast()
    }

    func give(_ slot: UnsafeMutableRawPointer) {
        sodium_memzero(slot, Self.slotSize)
        pthread_mutex_lock(mutex)
        free.append(slot)
        pthread_mutex_unlock(mutex)
    }
}
