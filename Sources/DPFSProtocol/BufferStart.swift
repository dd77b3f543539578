// Buffer addresses for C calls, which want a valid pointer even for zero bytes.

/// A valid address for zero-length buffers, which C APIs still want non-null.
nonisolated(unsafe) private let emptyByte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)

extension UnsafeRawBufferPointer {
    /// The first byte's address (a never-read valid address when empty).
    public var start: UnsafePointer<UInt8> {
        baseAddress.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) } ?? UnsafePointer(emptyByte)
    }
}

extension UnsafeMutableRawBufferPointer {
    public var start: UnsafeMutablePointer<UInt8> {
        baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? emptyByte
    }
}
