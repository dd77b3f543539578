// An item's data on its way to its seal. From the control socket it arrives in the
// frame's secret section, in locked memory, and is sealed from there; an in-process
// caller (the CLI's own store, tests) passes it in the request as Data.
import Foundation

enum ItemData {
    /// Runs `body` on `secret` when there is one, else on `data`'s bytes (nil: none).
    static func with<T>(_ secret: UnsafeRawBufferPointer?, or data: Data?,
                        _ body: (UnsafeRawBufferPointer?) throws -> T) rethrows -> T {
        if let secret { return try body(secret) }
        guard let data else { return try body(nil) }
        return try data.withUnsafeBytes { try body($0) }
    }
}
