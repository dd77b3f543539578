// An invitation for one more device (dpfs(5)): a 0600 file written by a member,
// holding the account id, the server's URL without its password, the epoch, the current account key and id
// key, a one-time token whose hash the member registered on the server, and a check:
// BLAKE2b-256 under the token of everything before it, so that a damaged file is
// refused at join rather than joining a device whose keys open nothing. Built and
// read in locked memory: it is as secret as the account key. The server alone cannot
// join anyone (it never sees the keys); the invitation alone joins once.
import DPFSProtocol
import DataProtection
import Foundation
import Glibc

struct Invitation {
    static let magic = "dpfs-sync-invitation-v2"
    /// The format before the check: its damage went unnoticed, so it is refused.
    static let uncheckedMagic = "dpfs-sync-invitation-v1"
    static let checkSize = 32

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

    /// The check of an invitation's fields before it: not secret (a MAC tells nothing of its key).
    static func check(of body: UnsafeRawBufferPointer, token: UnsafeRawBufferPointer) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: checkSize)
        mac.withUnsafeMutableBytes { Sodium.hash(body, key: token, into: $0) }
        return mac
    }

    func write(to path: String) throws {
        let header = [Self.magic, accountID, server, String(epoch)].flatMap { LengthPrefixed.encode([$0]) }
        // The header is not secret; the token and the keys go from locked memory to locked memory.
        let tail = LengthPrefixed.secret([token.bytes, keyPair.bytes])
        let body = header.count + tail.count
        let file = SecureBuffer(count: body + 4 + Self.checkSize)
        header.withUnsafeBytes { file.mutableBytes.copyMemory(from: $0) }
        withExtendedLifetime(tail) {
            UnsafeMutableRawBufferPointer(rebasing: file.mutableBytes[header.count..<body]).copyMemory(from: tail.bytes)
        }
        let check = Self.check(of: UnsafeRawBufferPointer(rebasing: file.bytes[..<body]), token: token.bytes)
        let field = [0, 0, 0, UInt8(Self.checkSize)] + check
        field.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: file.mutableBytes[body...]).copyMemory(from: $0) }
        if unlink(path) != 0 && errno != ENOENT { throw SystemError("unlink", path) }
        try AtomicFile.createSecret(file, at: path)
    }

    static func read(from path: String) throws -> Invitation {
        var st = stat()
        guard stat(path, &st) == 0 else { throw SystemError("stat", path) }
        guard st.st_mode & 0o077 == 0 else {
            throw SyncError("the invitation \(path) is readable by others (chmod 600 it, or ask for a new one)")
        }
        let notInvitation = SyncError("\(path) is not a dpfs sync invitation")
        guard st.st_size > 0, st.st_size < 65536 else { throw notInvitation }
        let file = try AtomicFile.readSecret(path, count: Int(st.st_size))
        // The fields point into the file's locked buffer: it must outlive their copies.
        return try withExtendedLifetime(file) {
            guard let fields = LengthPrefixed.fields(file.bytes), let first = fields.first else { throw notInvitation }
            if LengthPrefixed.text(first) == uncheckedMagic {
                throw SyncError("\(path) is an invitation from an older dpfs, which carries no check; ask a member for a new one")
            }
            guard LengthPrefixed.text(first) == magic, fields.count == 7, fields[4].count == 32,
                  fields[6].count == checkSize else { throw notInvitation }
            let body = UnsafeRawBufferPointer(rebasing: file.bytes[..<(file.count - 4 - checkSize)])
            let expected = check(of: body, token: fields[4])
            guard expected.withUnsafeBytes({ Sodium.equal($0, fields[6]) }) else {
                throw SyncError("the invitation \(path) is damaged; ask a member for a new one")
            }
            guard Hex.decode(LengthPrefixed.text(fields[1]))?.count == 16, let epoch = Int(LengthPrefixed.text(fields[3])),
                  fields[5].count == 2 * AEAD.keySize else { throw notInvitation }
            return Invitation(accountID: LengthPrefixed.text(fields[1]), server: LengthPrefixed.text(fields[2]), epoch: epoch,
                              token: SecureBuffer(copying: fields[4]), keyPair: SecureBuffer(copying: fields[5]))
        }
    }
}
