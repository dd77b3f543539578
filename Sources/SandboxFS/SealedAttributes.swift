// user.* extended attributes (other than user.dpfs.*) are stored sealed on the backing
// node: value = 0xD5 ‖ nonce ‖ ciphertext ‖ tag (XChaCha20-Poly1305, 41 bytes more
// than the value), under the class `none` key, with "dpfs-xattr-1" ‖ the file's
// identity (regular files; from its header) ‖ the attribute name as associated data.
// So a value moved to another name or another file, or altered, reads as EIO, never as
// another value. Names stay in clear, like a file's name.
//
// Why the class none key and not the file key: attributes are metadata, which a lock
// never refuses (listing, stat, getfattr and cp -a of metadata keep working while
// locked), as APFS keeps them under its metadata key, not the per-file key. Class none
// is the device-bound class (its key is wrapped by the device secret only), so a copy
// of the sandbox tree alone, or the backing disk without the device secret, does not
// show them. Directories have no file identity: their values are bound to the name.
import BlockStore
import CLinux
import DataProtection
import Glibc
import SystemCalls

extension SandboxFileSystem {
    static let sealedMarker: UInt8 = 0xD5
    static let sealedOverhead = 1 + AEAD.overhead
    static let largestValue = largestAttributeValue

    /// Whether an attribute's value is stored sealed.
    static func isSealed(_ attribute: String) -> Bool {
        attribute.hasPrefix("user.") && !attribute.hasPrefix(reservedPrefix)
    }

    /// The associated data binding a value to its node and name; the error that kept
    /// a regular file's header from being read.
    func attributeBinding(_ node: Inode, _ name: UnsafePointer<CChar>) throws(Errno) -> [UInt8] {
        var binding = Array("dpfs-xattr-1".utf8) + [0]
        if node.isRegular { binding += try header(of: node).fileID }
        binding += Array(String(cString: name).utf8)
        return binding
    }

    func getSealedAttribute(_ node: Inode, _ name: UnsafePointer<CChar>,
                            _ value: UnsafeMutablePointer<CChar>?, _ size: Int) throws(Errno) -> Int {
        // The stored value, read whole (it may change size between calls: retry).
        var stored: [UInt8] = []
        while true {
            let needed = try systemCall(onPathOf: node) { CLinux.getxattr($0, name, nil, 0) }
            stored = [UInt8](repeating: 0, count: needed)
            do throws(Errno) {
                let got = try systemCall(onPathOf: node) { backing in
                    stored.withUnsafeMutableBytes { CLinux.getxattr(backing, name, $0.baseAddress, needed) }
                }
                stored.removeLast(needed - got)
                break
            } catch where error.rawValue == ERANGE {
                continue  // it grew since its size was read
            }
        }
        guard stored.count >= Self.sealedOverhead, stored[0] == Self.sealedMarker else { throw Errno.io }
        let binding = try attributeBinding(node, name)
        var plain = [UInt8](repeating: 0, count: stored.count - Self.sealedOverhead)
        let opened = device.withClassKey(.none) { key in
            stored.withUnsafeBytes { sealed in
                binding.withUnsafeBytes { ad in
                    plain.withUnsafeMutableBytes { output in
                        AEAD.open(UnsafeRawBufferPointer(rebasing: sealed[1...]), additionalData: ad,
                                  key: key.pointer, into: output)
                    }
                }
            }
        }
        switch opened {
        case nil: throw Errno.notPermitted  // the none key is gone (keybag erased)
        case false?: throw Errno.io         // altered, moved or planted in clear
        case true?: break
        }
        defer { plain.withUnsafeMutableBytes { if let base = $0.baseAddress { memset(base, 0, $0.count) } } }
        if size == 0 { return plain.count }
        guard size >= plain.count, let value else { throw Errno(ERANGE) }
        plain.withUnsafeBytes { UnsafeMutableRawPointer(value).copyMemory(from: $0.start, byteCount: plain.count) }
        return plain.count
    }

    func setSealedAttribute(_ node: Inode, _ name: UnsafePointer<CChar>, _ value: UnsafePointer<CChar>?,
                            _ size: Int, _ flags: Int32) throws(Errno) {
        // What the backing call would say of the sealed value.
        guard size + Self.sealedOverhead <= Self.largestValue else { throw Errno(E2BIG) }
        let binding = try attributeBinding(node, name)
        var sealed = [UInt8](repeating: 0, count: size + Self.sealedOverhead)
        sealed[0] = Self.sealedMarker
        let plain = UnsafeRawBufferPointer(start: value.map { UnsafeRawPointer($0) }, count: value == nil ? 0 : size)
        let done: Void? = device.withClassKey(.none) { key in
            binding.withUnsafeBytes { ad in
                sealed.withUnsafeMutableBytes { output in
                    AEAD.seal(plain, additionalData: ad, key: key.pointer,
                              into: UnsafeMutableRawBufferPointer(rebasing: output[1...]))
                }
            }
        }
        guard done != nil else { throw Errno.notPermitted }
        let count = sealed.count
        try systemCall(onPathOf: node) { backing in
            sealed.withUnsafeBytes { CLinux.setxattr(backing, name, $0.baseAddress, count, flags) }
        }
    }
}
