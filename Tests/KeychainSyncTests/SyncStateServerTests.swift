// The server's string in sync.json: a password in it is sealed under the untilFirstAuth
// class key, so a copy of the device directory does not give it away; a string with no
// secret stays as given; a state written before sealing is sealed at the first round
// after the first unlock.
import DataProtection
import Foundation
@testable import KeychainSync
import TestSupport
import Testing

@Suite struct SyncStateServerTests {
    static let password = "Sup3rS3cretPW"
    static let server = "postgresql://dpfs:\(password)@127.0.0.1:5432/sync"

    private func state(server: String, sealedServer: String? = nil) -> SyncState {
        SyncState(accountID: "acct", server: server, sealedServer: sealedServer, deviceID: "dev", epoch: 1,
                  sealedKeys: "", sealedPrivateKey: "", publicKey: "", lastSequence: 0, entries: [:], roster: nil)
    }

    private func fileText(_ state: SyncState, in directory: DeviceDirectory) throws -> String {
        try state.save(in: directory)
        return try String(contentsOfFile: SyncState.path(in: directory), encoding: .utf8)
    }

    @Test func aPasswordIsSealedAndOpensToTheWholeString() throws {
        let provisioned = try ProvisionedDevice(passcode: ProvisionedDevice.secret("1234"), prefix: "dpfs-syncserver")
        let device = try LockStateManager(directory: provisioned.directory, gracePeriod: 0)
        #expect(try SyncState.keeping(server: Self.server, accountID: "acct", device: device) == nil,
                "before the first unlock there is no key to seal with")
        try device.unlock(passcode: ProvisionedDevice.secret("1234"))
        let kept = try #require(try SyncState.keeping(server: Self.server, accountID: "acct", device: device))
        #expect(kept.shown == "postgresql://dpfs@127.0.0.1:5432/sync")
        let saved = state(server: kept.shown, sealedServer: kept.sealed)
        #expect(try !fileText(saved, in: provisioned.directory).contains(Self.password))
        let loaded = try #require(try SyncState.load(from: provisioned.directory))
        let connecting = try #require(try loaded.connectionString(device: device))
        #expect(connecting.options.contains { $0.keyword == "password" && $0.value == Self.password })
    }

    @Test func aServerWithoutSecretIsKeptAsGiven() throws {
        let provisioned = try ProvisionedDevice(passcode: nil, prefix: "dpfs-syncserver")
        let device = try LockStateManager(directory: provisioned.directory, gracePeriod: 0)
        let plain = "host=127.0.0.1 port=5432 user=dpfs dbname=sync"
        let kept = try #require(try SyncState.keeping(server: plain, accountID: "acct", device: device))
        #expect(kept.shown == plain && kept.sealed == nil)
    }

    @Test func anOlderStateIsSealedOnceTheDeviceIsUnlocked() throws {
        let provisioned = try ProvisionedDevice(passcode: ProvisionedDevice.secret("1234"), prefix: "dpfs-syncserver")
        let device = try LockStateManager(directory: provisioned.directory, gracePeriod: 0)
        var older = state(server: Self.server)
        try older.sealServerIfClear(device: device)
        #expect(older.sealedServer == nil && older.server == Self.server, "no key yet: left as it was")
        try device.unlock(passcode: ProvisionedDevice.secret("1234"))
        try older.sealServerIfClear(device: device)
        #expect(older.sealedServer != nil)
        #expect(try !fileText(older, in: provisioned.directory).contains(Self.password))
        let connecting = try #require(try older.connectionString(device: device))
        #expect(connecting.options.contains { $0.keyword == "password" && $0.value == Self.password })
    }

    @Test func aSealedServerDoesNotOpenUnderAnotherAccount() throws {
        let provisioned = try ProvisionedDevice(passcode: nil, prefix: "dpfs-syncserver")
        let device = try LockStateManager(directory: provisioned.directory, gracePeriod: 0)
        let kept = try #require(try SyncState.keeping(server: Self.server, accountID: "acct", device: device))
        var moved = state(server: kept.shown, sealedServer: kept.sealed)
        moved.accountID = "other"
        #expect(throws: SyncError.self) { try moved.connectionString(device: device) }
    }
}
