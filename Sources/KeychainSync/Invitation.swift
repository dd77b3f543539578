// An invitation for one more device (dpfs(5)): a 0600 file written by a member,
// holding the account id, the server's URL, the epoch, the current account key and id
// key, and a one-time token whose hash the member registered on the server. Built and
// read in locked memory: it is as secret as the account key. The server alone cannot
// join anyone (it never sees the keys); the invitation alone joins once.
import DataProtection
import Foundation
import Glibc

struct Invitation {
    static let magic = "dpfs-sync-invitation-v1"

    var accountID: String
    var server: String
    var epoch: Int
    var token: SecureBuffer
    var keyPair: SecureBuffer

    /// BLAKE2b-256 of the token: what the server keeps.
    var tokenHash: [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        digest.withUnsafeMutableBytes { Sodium.hash(token.bytes, into: $0) }
        return digest
    }

    func write(to path: String) throws {
        let header = [Self.magic, accountID, server, String(epoch)].map { Array($0.utf8) }
        let count = header.reduce(0) { $0 + 4 + $1.count } + 8 + token.count + keyPair.count
        let file = SecureBuffer(count: count)
        var offset = 0
        func put(_ bytes: UnsafeRawBufferPointer) {
            let length = UInt32(bytes.count)
            for (index, byte) in [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)].enumerated() {
                file.mutableBytes[offset + index] = byte
            }
            offset += 4
            if let base = bytes.baseAddress, bytes.count > 0 {
                file.mutableBytes.baseAddress.map { ($0 + offset).copyMemory(from: base, byteCount: bytes.count) }
            }
            offset += bytes.count
        }
        for field in header { field.withUnsafeBytes(put) }
        put(token.bytes)
        put(keyPair.bytes)
        if unlink(path) != 0 && errno != ENOENT { throw SystemError("unlink", path) }
        try AtomicFile.createSecret(file, at: path)
    }

    static func read(from path: String) throws -> Invitation {
        var st = stat()
        guard stat(path, &st) == 0 else { throw SystemError("stat", path) }
        guard st.st_mode & 0o077 == 0 else {
            throw SyncError("the invitation \(path) is readable by others (chmod 600 it, or ask for a new one)")
        }
        guard st.st_size > 0, st.st_size < 65536 else { throw SyncError("\(path) is not a dpfs sync invitation") }
        let file = try AtomicFile.readSecret(path, count: Int(st.st_size))
        let bytes = file.bytes
        var offset = 0
        func field() -> UnsafeRawBufferPointer? {
            guard bytes.count - offset >= 4 else { return nil }
            let count = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            offset += 4
            guard bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        }
        let text = { (raw: UnsafeRawBufferPointer?) in raw.map { String(decoding: $0, as: UTF8.self) } }
        guard text(field()) == magic, let accountID = text(field()), let server = text(field()),
              let epoch = text(field()).flatMap({ Int($0) }), let token = field(), let keys = field(),
              offset == bytes.count, token.count == 32, keys.count == 2 * AEAD.keySize,
              Hex.decode(accountID)?.count == 16 else {
            throw SyncError("\(path) is not a dpfs sync invitation")
        }
        return Invitation(accountID: accountID, server: server, epoch: epoch,
                          token: SecureBuffer(copying: token), keyPair: SecureBuffer(copying: keys))
    }
}
