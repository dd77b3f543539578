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

extension SandboxFileSystem {
    static let sealedMarker: UInt8 = 0xD5
    static let sealedOverhead = 1 + AEAD.overhead
    static let largestValue = largestAttributeValue

    /// Whether an attribute's value is stored sealed.
    static func isSealed(_ attribute: String) -> Bool {
        attribute.hasPrefix("user.") && !attribute.hasPrefix(reservedPrefix)
    }

    /// The associated data binding a value to its node and name; nil when a regular
    /// file's header cannot be read (-errno in `failure`).
    func attributeBinding(_ node: Inode, _ name: UnsafePointer<CChar>) -> Result<[UInt8], Errno> {
        var binding = Array("dpfs-xattr-1".utf8) + [0]
        if node.isRegular {
            switch header(of: node) {
            case .failure(let rc): return .failure(rc)
            case .success(let header): binding += header.fileID
            }
        }
        binding += Array(String(cString: name).utf8)
        return .success(binding)
    }

    func getSealedAttribute(_ node: Inode, _ name: UnsafePointer<CChar>,
                            _ value: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
        // The stored value, read whole (it may change size between calls: retry).
        var stored: [UInt8] = []
        while true {
            let needed = withNodePath(node) { CLinux.getxattr($0, name, nil, 0) }
            guard needed >= 0 else { return -errno }
            stored = [UInt8](repeating: 0, count: needed)
            let got = withNodePath(node) { backing in
                stored.withUnsafeMutableBytes { CLinux.getxattr(backing, name, $0.baseAddress, needed) }
            }
            if got >= 0 { stored.removeLast(needed - got); break }
            if errno != ERANGE { return -errno }
        }
        guard stored.count >= Self.sealedOverhead, stored[0] == Self.sealedMarker else { return -EIO }
        let binding: [UInt8]
        switch attributeBinding(node, name) {
        case .failure(let rc): return rc.negated
        case .success(let bytes): binding = bytes
        }
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
        case nil: return -EPERM       // the none key is gone (keybag erased)
        case false?: return -EIO      // altered, moved or planted in clear
        case true?: break
        }
        defer { plain.withUnsafeMutableBytes { if let base = $0.baseAddress { memset(base, 0, $0.count) } } }
        if size == 0 { return Int32(plain.count) }
        guard size >= plain.count, let value else { return -ERANGE }
        plain.withUnsafeBytes { UnsafeMutableRawPointer(value).copyMemory(from: $0.start, byteCount: plain.count) }
        return Int32(plain.count)
    }

    func setSealedAttribute(_ node: Inode, _ name: UnsafePointer<CChar>, _ value: UnsafePointer<CChar>?,
                            _ size: Int, _ flags: Int32) -> Int32 {
        // What the backing call would say of the sealed value.
        guard size + Self.sealedOverhead <= Self.largestValue else { return -E2BIG }
        let binding: [UInt8]
        switch attributeBinding(node, name) {
        case .failure(let rc): return rc.negated
        case .success(let bytes): binding = bytes
        }
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
        guard done != nil else { return -EPERM }
        let count = sealed.count
        let rc = withNodePath(node) { backing in
            sealed.withUnsafeBytes { CLinux.setxattr(backing, name, $0.baseAddress, count, flags) }
        }
        return rc == 0 ? 0 : -errno
    }
}
