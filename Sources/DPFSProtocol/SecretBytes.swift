// Secrets as the protocol carries them (passcodes, keychain item data): bytes in
// locked memory, never in a Swift Array, Data or String. The daemon keeps its own in
// libsodium's guarded allocations (DataProtection's SecureBuffer); a client library,
// which must not link libsodium, uses LockedSecret.
import Glibc

/// Secret bytes a frame can send.
public protocol SecretBytes: AnyObject {
    var bytes: UnsafeRawBufferPointer { get }
}

/// Secret bytes a frame (or a secret's input) can be read into.
public protocol AllocatedSecret: SecretBytes {
    /// `count` zero bytes in locked memory.
    init(count: Int)
    var mutableBytes: UnsafeMutableRawBufferPointer { get }
}

extension AllocatedSecret {
    /// A copy of `bytes` in locked memory.
    public static func copying(_ bytes: UnsafeRawBufferPointer) -> Self {
        let secret = Self(count: bytes.count)
        if let source = bytes.baseAddress, bytes.count > 0 { secret.mutableBytes.baseAddress?.copyMemory(from: source, byteCount: bytes.count) }
        return secret
    }
}

/// Locked memory of its own for one secret: pages mapped for it alone, locked out of
/// swap (as far as RLIMIT_MEMLOCK allows), left out of core dumps, zeroed before they
/// are unmapped.
public final class LockedSecret: AllocatedSecret, @unchecked Sendable {
    // @unchecked: the owner serialises access to the bytes, as with SecureBuffer.
    public let count: Int
    private let base: UnsafeMutableRawPointer
    private let mapped: Int

    public init(count: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        mapped = max(page, (count + page - 1) / page * page)
        guard let memory = mmap(nil, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              memory != MAP_FAILED else {
            fatalError("mmap failed: no memory for a secret")
        }
        base = memory
        self.count = count
        _ = mlock(base, mapped)
        _ = madvise(base, mapped, MADV_DONTDUMP)
    }

    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
    public var mutableBytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: base, count: count) }

    /// Zeroes the secret; the pages stay mapped until it is released.
    public func wipe() { explicit_bzero(base, mapped) }

    deinit {
        explicit_bzero(base, mapped)
        munlock(base, mapped)
        munmap(base, mapped)
    }
}
