// SecRandomCopyBytes, which keychain wrappers call for salts and keys: the kernel's
// CSPRNG (getrandom), as Apple's reads its own.
import CLinux
import Glibc

public typealias SecRandomRef = OpaquePointer
public var kSecRandomDefault: SecRandomRef? { nil }

/// Fills `bytes` with `count` random bytes; errSecSuccess, or errSecParam when `rnd` is
/// not kSecRandomDefault, or errSecInternalComponent if the kernel refuses.
public func SecRandomCopyBytes(_ rnd: SecRandomRef?, _ count: Int, _ bytes: UnsafeMutableRawPointer) -> Int32 {
    guard rnd == nil, count >= 0 else { return errSecParam }
    var filled = 0
    while filled < count {
        let n = getrandom(bytes + filled, count - filled, 0)
        if n < 0 {
            if errno == EINTR { continue }
            return errSecInternalComponent
        }
        filled += n
    }
    return errSecSuccess
}
