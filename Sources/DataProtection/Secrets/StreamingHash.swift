// BLAKE2b over a message given in pieces (libsodium's crypto_generichash state), for
// digests of more than fits one buffer: the item store's whole state (KeychainState).
// Not for secrets: the state lives on the Swift heap.
import CSodium

public struct StreamingHash: ~Copyable {
    private let state: UnsafeMutableRawPointer
    private let outputLength: Int

    /// `outputLength` bytes of digest (16...64).
    public init(outputLength: Int = 32) {
        precondition(Sodium.ready, "libsodium failed to initialise")
        // crypto_generichash_state wants 64-byte alignment.
        state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        self.outputLength = outputLength
        _ = crypto_generichash_init(OpaquePointer(state), nil, 0, outputLength)
    }

    deinit { state.deallocate() }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        _ = crypto_generichash_update(OpaquePointer(state), bytes.start, UInt64(bytes.count))
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Adds `value` as eight little-endian bytes: lengths and tags that keep the pieces
    /// of a message from running into each other.
    public mutating func update(_ value: Int) {
        withUnsafeBytes(of: UInt64(bitPattern: Int64(value)).littleEndian) { update($0) }
    }

    public consuming func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: outputLength)
        digest.withUnsafeMutableBytes { _ = crypto_generichash_final(OpaquePointer(state), $0.start, $0.count) }
        return digest
    }
}
