// fsck's walk (DeviceCheck) on a backing tree made as `dpfs init` makes it, without a
// mount: a new tree is clean, and a planted name, an altered class record and a file
// that is not a sealed file are each reported by path, never skipped.
import BlockStore
import DataProtection
import Foundation
import CLinux
import Glibc
import Testing
import TestSupport

final class CheckedDevice {
    let provisioned: ProvisionedDevice
    let device: LockStateManager

    init() throws {
        provisioned = try ProvisionedDevice(passcode: nil, prefix: "dpfs-devicecheck")
        device = try LockStateManager(directory: provisioned.directory, gracePeriod: 0)
        try SandboxTree.create(in: provisioned.directory, defaultClass: .untilFirstAuth,
                               metadataKey: device.metadataKey, names: device.nameCipher)
    }

    var root: String { provisioned.directory.sandboxPath }

    /// The backing path of a layout directory, found by opening each stored name.
    func backing(of plain: String) throws -> String {
        let entries = try FileManager.default.contentsOfDirectory(atPath: root)
        let rootID = try #require(DirectoryClassRecord.read(at: root, metadataKey: device.metadataKey)?.directoryID)
        for stored in entries {
            if let (name, _) = device.nameCipher.openPlaced(stored, directoryID: rootID),
               String(decoding: name, as: UTF8.self) == plain {
                return root + "/" + stored
            }
        }
        throw SystemError("no layout directory", plain, code: ENOENT)
    }

    func check() -> DeviceCheck.Report { DeviceCheck(device: device).run(salvageInto: nil) }
}

@Suite struct DeviceCheckTests {
    @Test func aNewTreeIsClean() throws {
        let checked = try CheckedDevice()
        let report = checked.check()
        #expect(report.damage.isEmpty, "\(report.damage)")
        #expect(report.files == 0)
    }

    @Test func aNameThatDoesNotOpenIsReported() throws {
        let checked = try CheckedDevice()
        let planted = checked.root + "/planted-by-hand"
        #expect(FileManager.default.createFile(atPath: planted, contents: Data("x".utf8)))
        let damage = checked.check().damage
        #expect(damage.contains { $0.path == "planted-by-hand" && $0.problem.contains("does not open") }, "\(damage)")
    }

    @Test func anAlteredClassRecordIsReported() throws {
        let checked = try CheckedDevice()
        let documents = try checked.backing(of: "Documents")
        var record = [UInt8](repeating: 0, count: 256)
        let size = getxattr(documents, MountAttributes.protection, &record, record.count)
        try #require(size > 0)
        record[size - 1] ^= 1
        try #require(setxattr(documents, MountAttributes.protection, record, size, 0) == 0)
        let damage = checked.check().damage
        #expect(damage.contains { $0.path == "Documents" }, "\(damage)")
    }

    @Test func aFileThatIsNoSealedFileIsReported() throws {
        let checked = try CheckedDevice()
        let documents = try checked.backing(of: "Documents")
        let id = try #require(DirectoryClassRecord.read(at: documents, metadataKey: checked.device.metadataKey)?.directoryID)
        let sealed = checked.device.nameCipher.seal(Array("notes.txt".utf8), directoryID: id)
        #expect(FileManager.default.createFile(atPath: documents + "/" + sealed.stored, contents: Data("plaintext".utf8)))
        let report = checked.check()
        #expect(report.damage.contains { $0.path == "Documents/notes.txt" }, "\(report.damage)")
    }
}
