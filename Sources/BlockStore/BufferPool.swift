// Reusable page-aligned buffers for the I/O path, so that a read or write allocates
// nothing: a request takes one slot and returns it when done. A slot is a buffer for
// ciphertext (and the request's scratch), a small locked buffer for the request's
// expanded file key (wiped at the end of every request, see BlockSealer), and the
// nonce generator of the requests that use the slot.
import DataProtection
import Foundation
import Glibc
import Synchronization

public final class IOSlot: @unchecked Sendable {
    // @unchecked: a slot belongs to one request at a time (the pool hands it out once).
    public let buffer: UnsafeMutableRawBufferPointer
    /// sodium_malloc'd, BlockCipher.stateSize bytes: key material only during a request.
    let keyState = SecureBuffer(count: BlockCipher.stateSize)
    let nonces = NonceSource()

    init(size: Int) {
        // A mapping of its own, so that a slot the pool lets go gives its memory back.
        guard let memory = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              memory != MAP_FAILED else {
            fatalError("out of memory allocating an I/O buffer of \(size) bytes")
        }
        buffer = UnsafeMutableRawBufferPointer(start: memory, count: size)
    }

    deinit {
        keyState.wipe()
        munmap(buffer.baseAddress, buffer.count)
    }

    /// A sealing context for `key` for the length of one request; call finish() on it.
    /// (libsodium's AES state only when libsodium does the work.)
    func sealer(_ cipher: BlockCipher, key: SecureBuffer) -> BlockSealer {
        BlockSealer(cipher: cipher, key: key.pointer,
                    state: keyState.mutableBytes.baseAddress)
    }
}

public final class BufferPool: Sendable {
    public let size: Int
    private let free = Mutex<[IOSlot]>([])
    /// Idle slots kept for the next requests; a burst of more concurrent requests makes
    /// more, which are unmapped when done, so the daemon's memory comes back down.
    let idleLimit = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)

    public init(size: Int) { self.size = size }

    public func withSlot<R, E: Error>(_ body: (IOSlot) throws(E) -> R) throws(E) -> R {
        let slot = free.withLock { $0.popLast() } ?? IOSlot(size: size)
        defer {
            free.withLock { slots in
                if slots.count < idleLimit { slots.append(slot) }
            }
        }
        return try body(slot)
    }

    /// Fills `output` with fresh random bytes for public values (file IDs, nonces) from
    /// a slot's nonce stream: no system call, unlike the system generator.
    public func fillPublicRandom(_ output: UnsafeMutableRawBufferPointer) {
        guard let base = output.baseAddress else { return }
        withSlot { $0.nonces.fill(base, count: output.count) }
    }

    public func withBuffer<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withSlot { (slot) throws(E) -> R in try body(slot.buffer) }
    }

    /// Zeroes every idle buffer: they may hold plaintext of partial blocks. The pages
    /// are given back (a private anonymous mapping reads as zeros afterwards) rather than
    /// written over, which would make all of every buffer resident.
    public func scrub() {
        free.withLock { slots in
            for slot in slots {
                if let base = slot.buffer.baseAddress, madvise(base, slot.buffer.count, MADV_DONTNEED) != 0 {
                    memset(base, 0, slot.buffer.count)
                }
                slot.keyState.wipe()
            }
        }
    }
}
