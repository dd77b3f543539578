// Owns secret bytes: allocated by libsodium in locked, guarded pages and zeroed on wipe.
// Secrets in dpfs never live in Swift Array, Data or String; they live here.
import CSodium
import Glibc

public final class SecureBuffer: @unchecked Sendable {
    // @unchecked: the owner of a SecureBuffer serialises access to its bytes
    // (a Mutex in the key ring, the readers-writer lock of an open file).
    public let count: Int
    private let base: UnsafeMutableRawPointer
    public private(set) var isWiped = false

    public init(count: Int) {
        precondition(Sodium.ready, "libsodium failed to initialise")
        guard let memory = sodium_malloc(max(count, 1)) else {
            fatalError("sodium_malloc failed: out of locked memory")
        }
        self.count = count
        self.base = memory
        sodium_memzero(memory, max(count, 1))
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
        sodium_free(base)  // sodium_free zeroes before unlocking and unmapping
    }
}
