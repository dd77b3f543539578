// The sync formats on their own: a record opens only under its account, record id and
// epoch; record ids are stable for an identity and differ between accounts; a record's
// plaintext and an invitation read back as written, and an invitation with any byte
// changed is refused; endorsements bind the member.
import DataProtection
import Foundation
import Testing
@testable import KeychainSync

@Suite struct SyncCryptoTests {
    private func account(_ id: String = "00112233445566778899aabbccddeeff") -> AccountCrypto {
        AccountCrypto(accountID: id, epoch: 1, key: SecureBuffer.random(count: AEAD.keySize),
                      idKey: SecureBuffer.random(count: AEAD.keySize))
    }

    private func secret(_ text: String) -> SecureBuffer {
        Array(text.utf8).withUnsafeBytes { SecureBuffer(copying: $0) }
    }

    @Test func aRecordOpensOnlyWhereItWasSealed() throws {
        let crypto = account()
        let sealed = crypto.seal(secret("payload"), recordID: "r1")
        let opened = try #require(crypto.open(sealed, recordID: "r1", epoch: 1))
        #expect(Array(opened.bytes) == Array("payload".utf8))
        #expect(crypto.open(sealed, recordID: "r2", epoch: 1) == nil)
        #expect(crypto.open(sealed, recordID: "r1", epoch: 2) == nil)
        let other = AccountCrypto(accountID: "ffeeddccbbaa99887766554433221100", epoch: 1, key: crypto.key, idKey: crypto.idKey)
        #expect(other.open(sealed, recordID: "r1", epoch: 1) == nil)
        let next = crypto.rotated()
        #expect(next.epoch == 2)
        #expect(next.open(next.seal(secret("x"), recordID: "r1"), recordID: "r1", epoch: 2) != nil)
        // The old key opens nothing sealed under the new one.
        let old = AccountCrypto(accountID: crypto.accountID, epoch: 2, key: crypto.key, idKey: crypto.idKey)
        #expect(old.open(next.seal(secret("x"), recordID: "r1"), recordID: "r1", epoch: 2) == nil)
    }

    @Test func recordIDsAreStablePerAccount() {
        let a = account(), b = account()
        let identity = Array("identity".utf8)
        #expect(a.recordID(of: identity) == a.recordID(of: identity))
        #expect(a.recordID(of: identity) != b.recordID(of: identity))
        #expect(a.recordID(of: identity).count == 32)
        #expect(a.rotated().recordID(of: identity) == a.recordID(of: identity))
    }

    @Test func endorsementsBindTheMember() {
        let crypto = account()
        let (publicKey, _) = SealedBox.makeKeyPair()
        let endorsement = crypto.endorsement(deviceID: "d1", publicKey: publicKey)
        #expect(crypto.endorses(deviceID: "d1", publicKey: publicKey, endorsement: endorsement))
        #expect(!crypto.endorses(deviceID: "d2", publicKey: publicKey, endorsement: endorsement))
        #expect(!crypto.endorses(deviceID: "d1", publicKey: SealedBox.makeKeyPair().publicKey, endorsement: endorsement))
        #expect(!crypto.rotated().endorses(deviceID: "d1", publicKey: publicKey, endorsement: endorsement))
    }

    @Test func aKeyPairRoundTrips() throws {
        let crypto = account()
        let back = try #require(AccountCrypto(accountID: crypto.accountID, epoch: 1, keyPair: crypto.keyPair()))
        #expect(Array(back.key.bytes) == Array(crypto.key.bytes))
        #expect(Array(back.idKey.bytes) == Array(crypto.idKey.bytes))
        #expect(AccountCrypto(accountID: "x", epoch: 1, keyPair: SecureBuffer(count: 10)) == nil)
    }

    @Test func aRecordPlaintextRoundTrips() throws {
        let plaintext = RecordPlaintext(attributes: ["class": "genp", "service": "s", "modified": "12.5"], deleted: false,
                                        writer: "dev", secret: secret("se\u{0}cret"))
        let back = try #require(RecordPlaintext(decoding: plaintext.encoded()))
        #expect(back.attributes == plaintext.attributes)
        #expect(back.writer == "dev" && !back.deleted && back.modified == 12.5)
        #expect(Array(try #require(back.secret).bytes) == Array("se\u{0}cret".utf8))
        let tombstone = RecordPlaintext(attributes: ["modified": "3"], deleted: true, writer: "w", secret: nil)
        let opened = try #require(RecordPlaintext(decoding: tombstone.encoded()))
        #expect(opened.deleted && opened.secret?.count == 0)
        #expect(RecordPlaintext(decoding: secret("garbage")) == nil)
    }

    @Test func anInvitationRoundTripsAndRefusesOthers() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dpfs-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("invitation").path
        let crypto = account()
        let invitation = Invitation(accountID: crypto.accountID, server: "postgresql://u@h/db", epoch: 3,
                                    token: SecureBuffer.random(count: 32), keyPair: crypto.keyPair())
        try invitation.write(to: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let back = try Invitation.read(from: path)
        #expect(back.accountID == crypto.accountID && back.server == "postgresql://u@h/db" && back.epoch == 3)
        #expect(back.tokenHash == invitation.tokenHash)
        let expected = crypto.keyPair()
        withExtendedLifetime(expected) { #expect(Array(back.keyPair.bytes) == Array(expected.bytes)) }
        chmod(path, 0o644)
        #expect(throws: SyncError.self) { try Invitation.read(from: path) }
        try Data("not an invitation".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        #expect(throws: SyncError.self) { try Invitation.read(from: path) }
    }

    /// Every byte of an invitation, flipped in turn, makes a file that is refused: one
    /// accepted would join a device whose keys open nothing of the account.
    @Test func anInvitationWithAnyByteChangedIsRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dpfs-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("invitation").path
        let crypto = account()
        try Invitation(accountID: crypto.accountID, server: "postgresql://u@h/db", epoch: 3,
                       token: SecureBuffer.random(count: 32), keyPair: crypto.keyPair()).write(to: path)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        var accepted: [Int] = []
        for offset in 0..<original.count {
            var damaged = original
            damaged[offset] ^= 0x01
            try damaged.write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            do {
                _ = try Invitation.read(from: path)
                accepted.append(offset)
            } catch let error as SyncError {
                #expect(error.description.contains("is damaged") || error.description.contains("not a dpfs sync invitation"),
                        "\(error)")
            }
        }
        #expect(accepted.isEmpty, "bytes whose change was accepted: \(accepted)")
    }
}
