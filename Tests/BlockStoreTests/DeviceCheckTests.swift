// fsck's walk (DeviceCheck) on a backing tree made as `dpfs init` makes it, without a
// mount: a new tree is clean, and a planted name, an altered class record and a file
// that is not a sealed file are each reported by path, never skipped; a file cut
// short is reported as cut, with what is left of it.
import BlockStore
import DataProtection
import Foundation
import CLinux
import Glibc
import SystemCalls
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

    func check(salvageInto salvage: String? = nil) -> DeviceCheck.Report {
        DeviceCheck(device: device).run(salvageInto: salvage)
    }

    /// Makes Documents/`name` as the mount does, holding `plain`; its backing path.
    func makeFile(_ name: String, holding plain: [UInt8]) throws -> String {
        let documents = try backing(of: "Documents")
        let id = try #require(DirectoryClassRecord.read(at: documents, metadataKey: device.metadataKey)?.directoryID)
        let sealedName = device.nameCipher.seal(Array(name.utf8), directoryID: id)
        let path = documents + "/" + sealedName.stored
        let fileID = Sodium.randomBytes(FileHeader.fileIDSize)
        let key = SecureBuffer.random(count: FileKeyWrap.fileKeySize)
        let wrapped = try #require(FileKeyWrap.wrap(key, fileID: fileID, as: .untilFirstAuth, device: device))
        let slot = FileHeader.KeySlot(generation: 1, protectionClass: .untilFirstAuth, wrappedKey: wrapped)
        let header = FileHeader(fileID: fileID, slot: slot)
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        try BlockIO.writeNewFile(fd: fd, header: header, key: key, metadataKey: device.metadataKey,
                                 blockNonce: Sodium.randomBytes(BlockIO.nonceField))
        let file = SealedFile(fd: fd, header: header, slot: slot, key: key, plainSize: 0)
        let pool = BufferPool(size: (1 << 20) + 4 * BlockLayout.cipherBlockSize + 64 * 1024)
        let written = try plain.withBytes { (data) throws(Errno) in
            try BlockIO.write(file, key: key, data: data, offset: 0, pool: pool)
        }
        try #require(written == plain.count)
        try NameTagStore.write(path, [NameBinding.tag(identity: fileID, place: sealedName.place, metadataKey: device.metadataKey)])
        return path
    }
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

    // A damaged record still holds the directory's ID, or one byte off it: the ID its
    // names are sealed under is recovered, so the files below are checked and salvaged.
    @Test(arguments: [0, 5, 16, 20])
    func filesUnderADamagedClassRecordAreSalvaged(byte: Int) throws {
        let checked = try CheckedDevice()
        _ = try checked.makeFile("a.txt", holding: Array("precious work".utf8))
        let documents = try checked.backing(of: "Documents")
        var record = [UInt8](repeating: 0, count: 256)
        let size = getxattr(documents, MountAttributes.protection, &record, record.count)
        try #require(size == DirectoryClassRecord.size)
        record[byte] ^= 1
        try #require(setxattr(documents, MountAttributes.protection, record, size, 0) == 0)
        let salvage = checked.provisioned.directory.root + "-salvage"
        defer { try? FileManager.default.removeItem(atPath: salvage) }
        let report = checked.check(salvageInto: salvage)
        #expect(report.damage.map(\.path) == ["Documents"], "\(report.damage)")
        #expect(report.damage.first?.problem.contains("ID was recovered") == true, "\(report.damage)")
        #expect(report.files == 1)
        #expect(report.salvaged == 1)
        let copy = try? Data(contentsOf: URL(fileURLWithPath: salvage + "/Documents/a.txt"))
        #expect(copy == Data("precious work".utf8))
    }

    // An ID past recovery: the files below are still salvaged, under their stored names.
    @Test func filesUnderALostDirectoryIDAreSalvagedUnderStoredNames() throws {
        let checked = try CheckedDevice()
        let path = try checked.makeFile("a.txt", holding: Array("precious work".utf8))
        let documents = try checked.backing(of: "Documents")
        var record = [UInt8](repeating: 0, count: 256)
        let size = getxattr(documents, MountAttributes.protection, &record, record.count)
        try #require(size > 0)
        for index in 0..<size { record[index] ^= 0x5a }
        try #require(setxattr(documents, MountAttributes.protection, record, size, 0) == 0)
        let salvage = checked.provisioned.directory.root + "-salvage"
        defer { try? FileManager.default.removeItem(atPath: salvage) }
        let report = checked.check(salvageInto: salvage)
        #expect(report.damage.contains { $0.path == "Documents" && $0.problem.contains("cannot be recovered") }, "\(report.damage)")
        #expect(report.salvaged == 1)
        let stored = (path as NSString).lastPathComponent
        let copy = try? Data(contentsOf: URL(fileURLWithPath: salvage + "/Documents/" + stored))
        #expect(copy == Data("precious work".utf8))
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

    // The seal binds whether a block is the file's last: a file cut short names the
    // cut and how much is left, never a damaged block.

    static let block = BlockLayout.plainBlockSize
    static let contents = (0..<(244 * block + 576)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }

    @Test func aWholeFileIsClean() throws {
        let checked = try CheckedDevice()
        _ = try checked.makeFile("whole", holding: Self.contents)
        let report = checked.check()
        #expect(report.damage.isEmpty, "\(report.damage)")
        #expect(report.blocks == 245)
    }

    @Test func aCutOnABlockBoundaryIsReportedAsACut() throws {
        let checked = try CheckedDevice()
        let path = try checked.makeFile("cutme", holding: Self.contents)
        try #require(truncate(path, off_t(BlockLayout.backingOffset(ofBlock: 100))) == 0)
        let salvage = checked.provisioned.directory.root + "-salvage"
        defer { try? FileManager.default.removeItem(atPath: salvage) }
        let damage = checked.check(salvageInto: salvage).damage
        #expect(damage.map(\.description) == ["Documents/cutme: cut short after \(100 * Self.block) bytes: the rest is lost; "
            + "the salvaged copy holds those \(100 * Self.block) bytes, short of the original"])
        let copy = try Data(contentsOf: URL(fileURLWithPath: salvage + "/Documents/cutme"))
        #expect(copy == Data(Self.contents.prefix(100 * Self.block)), "the salvaged copy keeps the last stored block")
    }

    @Test func aCutThroughABlocksSealIsReportedAsACut() throws {
        let checked = try CheckedDevice()
        let path = try checked.makeFile("cutme", holding: Self.contents)
        try #require(truncate(path, off_t(BlockLayout.backingOffset(ofBlock: 100) + 20)) == 0)
        let damage = checked.check().damage
        #expect(damage.map(\.description) == ["Documents/cutme: cut short after \(100 * Self.block) bytes: the rest is lost"])
    }

    @Test func aCutInsideABlockNamesTheCutAndTheDamageItLooksLike() throws {
        let checked = try CheckedDevice()
        let path = try checked.makeFile("cutme", holding: Self.contents)
        try #require(truncate(path, off_t(BlockLayout.backingOffset(ofBlock: 150) + 1000)) == 0)
        let damage = checked.check().damage
        #expect(damage.map(\.description) == ["Documents/cutme: its last block (150) does not open: cut short inside it "
            + "after \(150 * Self.block) bytes, the rest lost, or that block is damaged"])
    }

    @Test func aDamagedFullLastBlockIsNoCut() throws {
        let checked = try CheckedDevice()
        let path = try checked.makeFile("full", holding: Array(Self.contents.prefix(3 * Self.block)))
        let fd = open(path, O_RDWR)
        try #require(fd >= 0)
        defer { close(fd) }
        var byte: UInt8 = 0
        let offset = off_t(BlockLayout.backingOffset(ofBlock: 2) + 100)
        try #require(pread(fd, &byte, 1, offset) == 1)
        byte ^= 1
        try #require(pwrite(fd, &byte, 1, offset) == 1)
        let damage = checked.check().damage
        #expect(damage.map(\.description) == ["Documents/full: 1 damaged block (2) of 3"])
    }
}
