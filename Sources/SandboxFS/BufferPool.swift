// Reusable page-aligned buffers for the I/O path, so that a read or write allocates
// nothing: a request takes one buffer for ciphertext and returns it when done.
import Glibc
import Synchronization

final class BufferPool: Sendable {
    let size: Int
    // Addresses are stored as integers: raw pointers are not Sendable.
    private let free = Mutex<[UInt]>([])

    init(size: Int) { self.size = size }

    func withBuffer<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        let address = free.withLock { $0.popLast() } ?? Self.allocate(size)
        defer { free.withLock { $0.append(address) } }
        return try body(UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(bitPattern: address), count: size))
    }

    /// Zeroes every idle buffer: they may hold plaintext of partial blocks.
    func scrub() {
        free.withLock { addresses in
            for address in addresses {
                if let buffer = UnsafeMutableRawPointer(bitPattern: address) { memset(buffer, 0, size) }
            }
        }
    }

    private static func allocate(_ size: Int) -> UInt {
        var memory: UnsafeMutableRawPointer?
        guard posix_memalign(&memory, 4096, size) == 0, let memory else {
            fatalError("out of memory allocating an I/O buffer of \(size) bytes")
        }
        return UInt(bitPattern: memory)
    }
}
