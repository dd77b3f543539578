// dpfs fsck's engine: walks a device's backing tree with the keys of an unlocked
// device and checks every file: header, key slots, file key, every block, the tail.
// With a salvage directory, it copies out every block that still opens; a damaged
// block becomes a hole of zeros there. The first copy that cannot be written whole
// stops the salvage (the check goes on): it is reported, never taken for a copy.
import CLinux
import DataProtection
import Foundation
import Glibc
import SystemCalls

public struct DeviceCheck {
    public struct Damage: Sendable, CustomStringConvertible {
        public let path: String
        public let problem: String
        public var description: String { "\(path): \(problem)" }
    }

    public struct Report: Sendable {
        public var files = 0
        public var blocks = 0
        public var damage: [Damage] = []
        public var salvaged = 0
        /// Why the salvage stopped short (a write into the salvage directory failed).
        public var salvageFailure: String?
    }

    let device: LockStateManager
    let pool = BufferPool(size: 4 * BlockLayout.cipherBlockSize)

    /// Whether the device says no POSIX ACL was ever set on it (its `no-acls` marker): a
    /// mount then answers every ACL read with "none" without asking the backing node.
    let markedACLFree: Bool

    public init(device: LockStateManager) {
        self.device = device
        markedACLFree = access(device.directory.noACLsMarkerPath, F_OK) == 0
    }

    public func run(salvageInto salvage: String?) -> Report {
        var report = Report()
        walk(device.directory.sandboxPath, relative: "", place: nil, salvage: salvage, into: &report)
        return report
    }

    /// Checks a backing directory and everything below it, naming what it reports by
    /// plaintext path (names are sealed under each directory's ID, NameCipher). Below a
    /// directory whose ID is lost, entries are named by their stored (sealed) names, so
    /// that its files and subtrees are still checked and salvaged.
    private func walk(_ path: String, relative: String, place: NamePlace?, salvage: String?, into report: inout Report) {
        var salvage = report.salvageFailure == nil ? salvage : nil
        if let target = salvage, mkdir(target, 0o777) != 0, errno != EEXIST {
            report.salvageFailure = Self.salvageFailure(target, Errno.current)
            salvage = nil
        }
        let id = checkDirectoryClass(path, relative: relative, place: place, into: &report)
        if markedACLFree { checkNoACL(path, relative: relative, into: &report) }
        if let place, let id { checkNameTag(path, relative: relative, identity: id, place: place, into: &report) }
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: path) else {
            report.damage.append(Damage(path: relative.isEmpty ? "." : relative, problem: "cannot be listed"))
            return
        }
        for stored in entries.sorted() {
            // The reapers' directory and long names' side files are no entries of the mount.
            if stored.hasPrefix(".fuse_hidden") || LongName.isSideFile(stored) { continue }
            let child = path + "/" + stored
            var encoded = stored
            if LongName.isStandIn(stored) {
                guard let contents = try? String(contentsOfFile: child + LongName.sideFileSuffix, encoding: .utf8),
                      LongName.matches(stored, encoded: contents) else {
                    report.damage.append(Damage(path: join(relative, stored), problem: "a long name whose side file is missing or does not match"))
                    continue
                }
                encoded = contents
            }
            let plain: String
            let place: NamePlace?
            if let id {
                guard let (plainBytes, opened) = device.nameCipher.openPlaced(encoded, directoryID: id) else {
                    report.damage.append(Damage(path: join(relative, stored), problem: "a name that does not open (forged, or moved from another directory)"))
                    continue
                }
                plain = String(decoding: plainBytes, as: UTF8.self)
                place = opened
            } else {
                plain = stored
                place = nil
            }
            let childRelative = join(relative, plain)
            let target = report.salvageFailure == nil ? salvage.map { $0 + "/" + plain } : nil
            var st = stat()
            guard lstat(child, &st) == 0 else { continue }
            switch st.st_mode & S_IFMT {
            case S_IFDIR:
                walk(child, relative: childRelative, place: place, salvage: target, into: &report)
            case S_IFREG:
                report.files += 1
                if markedACLFree { checkNoACL(child, relative: childRelative, into: &report) }
                check(child, relative: childRelative, place: place, salvage: target, into: &report)
            case S_IFLNK:
                guard let stored = storedTarget(of: child),
                      let linkTarget = openTarget(stored) else {
                    report.damage.append(Damage(path: childRelative, problem: "symlink target does not open (forged or damaged)"))
                    continue
                }
                if let target, symlink(String(decoding: linkTarget, as: UTF8.self), target) != 0 {
                    report.salvageFailure = Self.salvageFailure(target, Errno.current)
                }
            default:
                continue
            }
        }
    }

    /// The stored target of the symlink at `path`, up to PATH_MAX bytes as the daemon
    /// reads it (Foundation's destinationOfSymbolicLink stops short of long ones).
    private func storedTarget(of path: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let n = buffer.withUnsafeMutableBytes { bytes -> Int in
            guard let start = bytes.baseAddress else { return -1 }
            return readlink(path, start.assumingMemoryBound(to: CChar.self), bytes.count)
        }
        guard n >= 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }

    /// A stored symlink target's plaintext, a long one's from its file at the sandbox root.
    private func openTarget(_ stored: String) -> [UInt8]? {
        let sandbox = Glibc.open(device.directory.sandboxPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard sandbox >= 0 else { return nil }
        defer { close(sandbox) }
        return LongTargetFiles.open(stored, cipher: device.nameCipher, sandbox: sandbox)
    }

    /// The salvage's one failure line: the copy it names is not left behind.
    private static func salvageFailure(_ target: String, _ error: Errno) -> String {
        "the salvage stopped: cannot write \(target): \(error) (nothing incomplete is left there)"
    }

    private func join(_ relative: String, _ name: String) -> String {
        relative.isEmpty ? name : relative + "/" + name
    }

    private func check(_ path: String, relative: String, place: NamePlace?, salvage: String?, into report: inout Report) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            report.damage.append(Damage(path: relative, problem: String(cString: strerror(errno))))
            return
        }
        var st = stat()
        fstat(fd, &st)
        let header: FileHeader
        do {
            header = try HeaderIO.read(fd, metadataKey: device.metadataKey)
        } catch {
            close(fd)
            let problem = st.st_size < BlockLayout.headerSize
                ? "backing file is \(st.st_size) bytes, shorter than a header: cut short"
                : "header damaged or forged (no key slot verifies); the file cannot be read"
            report.damage.append(Damage(path: relative, problem: problem))
            return
        }
        guard let slot = header.current else { close(fd); return }
        if let place { checkNameTag(path, relative: relative, identity: header.fileID, place: place, into: &report) }
        if header.isRekeying {
            report.damage.append(Damage(path: relative, problem: "a class raise was interrupted by a kill (its blocks are under two keys; opening the file through the mount finishes it)"))
        } else if header.staleSlotIndex != nil {
            report.damage.append(Damage(path: relative, problem: "a superseded key slot is still present (a class change was cut short; opening the file through the mount clears it)"))
        }
        let key: SecureBuffer
        do {
            key = try FileKeyWrap.unwrap(slot.wrappedKey, fileID: header.fileID, as: slot.protectionClass, device: device)
        } catch {
            close(fd)
            let why = error == .unavailable ? "class \(slot.protectionClass.name) is not available" : "file key does not unwrap (damaged)"
            report.damage.append(Damage(path: relative, problem: why))
            return
        }
        // A raise cut short: blocks not yet moved open under the old slot's key.
        let oldKey: SecureBuffer? = header.isRekeying ? header.staleSlotIndex.flatMap { header.slots[$0] }.flatMap {
            try? FileKeyWrap.unwrap($0.wrappedKey, fileID: header.fileID, as: $0.protectionClass, device: device)
        } : nil
        defer { oldKey?.wipe() }
        // Blocks a kill tore mid-rewrite are whole in the raise's journal.
        let journaled = header.isRekeying ? RekeyJournal(device: device.directory, fileID: header.fileID).range() : nil
        let backingSize = Int(st.st_size)
        let file = SealedFile(fd: fd, header: header, slot: slot, key: key,
                              plainSize: BlockLayout.plainSize(backingSize: backingSize))
        if header.pendingCut != nil {
            try? InterruptedCut.finish(file, key: key, pool: pool, repair: false)
            report.damage.append(Damage(path: relative, problem: "a truncate was interrupted by a kill (the file is checked at the size it cut to; opening it through the mount finishes the cut)"))
        }
        let plainSize = file.plainSize
        if plainSize == 0 && BlockLayout.isWholeBacking(backingSize) && (try? BlockIO.checkEmptyFile(file, key: key)) == nil
            && oldKey.map({ (try? BlockIO.checkEmptyFile(file, key: $0)) == nil }) ?? true {
            report.damage.append(Damage(path: relative, problem: "the empty file's last block does not open (cut short or altered)"))
        }
        var output: SalvageCopy?
        if let salvage, report.salvageFailure == nil {
            do throws(Errno) { output = try SalvageCopy(path: salvage) } catch { report.salvageFailure = Self.salvageFailure(salvage, error) }
        }
        var writeFailure: Errno?
        var damaged: [Int] = []
        var endsInOrdinaryBlock = false
        let blockCount = (plainSize + BlockLayout.plainBlockSize - 1) / BlockLayout.plainBlockSize
        pool.withBuffer { buffer in
            let plain = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<BlockLayout.plainBlockSize])
            let sealed = UnsafeMutableRawBufferPointer(rebasing: buffer[BlockLayout.plainBlockSize...])
            // A sparse file's holes read as zeros and hold nothing to check: the walk
            // asks the backing file where its data runs are, once per run, rather than
            // reading every hole block (a 1 TiB sparse file is 268 million of them).
            var dataUntil = 0
            var holeUntil = 0
            for block in 0..<blockCount {
                report.blocks += 1
                if block < holeUntil { continue }
                if block >= dataUntil && block < blockCount - 1 {
                    let data = (try? BlockIO.firstDataBlock(file, from: block, size: plainSize, zeroLast: false)) ?? block
                    if data > block {
                        holeUntil = min(data, blockCount - 1)
                        continue
                    }
                    let hole = (try? BlockIO.firstHoleBlock(file, from: block, size: plainSize, zeroLast: false)) ?? blockCount
                    dataUntil = max(hole, block + 1)
                }
                var opened = (try? BlockIO.readBlock(file, key: key, block: block, size: plainSize,
                                                     sealedScratch: sealed, into: plain)) != nil
                if !opened, let oldKey {
                    opened = (try? BlockIO.readBlock(file, key: oldKey, block: block, size: plainSize,
                                                     sealedScratch: sealed, into: plain)) != nil
                }
                // A file cut short on a block boundary ends in a block sealed as an ordinary one.
                if !opened, block == blockCount - 1, plainSize % BlockLayout.plainBlockSize == 0 {
                    func opensAsOrdinary(_ key: SecureBuffer) -> Bool {
                        BlockIO.opensAsOrdinaryBlock(file, key: key, block: block, sealedScratch: sealed, into: plain)
                    }
                    endsInOrdinaryBlock = opensAsOrdinary(key) || oldKey.map(opensAsOrdinary) == true
                    opened = endsInOrdinaryBlock
                }
                if !opened, let journaled, journaled.contains(BlockLayout.backingOffset(ofBlock: block)) { continue }
                if !opened { damaged.append(block); continue }
                if let output, writeFailure == nil {
                    let length = BlockLayout.plainLength(ofBlock: block, plainSize: plainSize)
                    do throws(Errno) {
                        try output.write(UnsafeRawBufferPointer(rebasing: plain[0..<length]),
                                         at: block * BlockLayout.plainBlockSize)
                    } catch { writeFailure = error }
                }
            }
            plain.initializeMemory(as: UInt8.self, repeating: 0)
        }
        var copied = false
        if let output {
            do throws(Errno) {
                if let writeFailure { throw writeFailure }
                try output.finish(size: plainSize)
                copied = true
                report.salvaged += 1
            } catch {
                if writeFailure != nil { output.remove() }
                report.salvageFailure = Self.salvageFailure(output.path, error)
            }
        }
        let end = FileEnd(backingSize: backingSize, plainSize: plainSize, endsInOrdinaryBlock: endsInOrdinaryBlock,
                          lastBlockOpens: damaged.last != blockCount - 1)
        damaged.removeAll { $0 == end.unopenedBlock }
        var problems: [String] = []
        if !damaged.isEmpty {
            let list = damaged.prefix(10).map(String.init).joined(separator: ", ") + (damaged.count > 10 ? ", …" : "")
            problems.append("\(damaged.count) damaged block\(damaged.count == 1 ? "" : "s") (\(list)) of \(blockCount)")
        }
        if let cut = end.problem(salvaged: copied) { problems.append(cut) }
        if !problems.isEmpty { report.damage.append(Damage(path: relative, problem: problems.joined(separator: "; "))) }
    }

    /// Reports a node whose name tags do not list the name it was found by: moved in the
    /// backing tree over another node's name (or its tags are damaged). It reads as EIO.
    private func checkNameTag(_ path: String, relative: String, identity: [UInt8], place: NamePlace,
                              into report: inout Report) {
        if let tags = try? NameTagStore.read(path),
           NameBinding.lists(tags, identity: identity, place: place, metadataKey: device.metadataKey) { return }
        report.damage.append(Damage(path: relative, problem: "its name tags do not list this name: another node was moved here in the backing tree (or its tags are damaged); it reads as EIO"))
    }

    /// Reports a node holding a POSIX ACL on a device marked as never having had one: set
    /// in the backing tree, past the mount, which would answer that it has none.
    private func checkNoACL(_ path: String, relative: String, into report: inout Report) {
        // An access ACL of three entries (owner, group, other) is only the mode; ext4
        // keeps it as the mode, and the mount lets it keep the marker.
        let modeOnlySize = 4 + 3 * 8
        let accessSize = lgetxattr(path, "system.posix_acl_access", nil, 0)
        let defaultSize = lgetxattr(path, "system.posix_acl_default", nil, 0)
        guard accessSize > modeOnlySize || defaultSize > 0 else { return }
        report.damage.append(Damage(path: relative.isEmpty ? "." : relative,
                                    problem: "holds a POSIX ACL, but the device's no-acls marker says none was ever set: the mount hides it (remove \(device.directory.noACLsMarkerPath) to show it)"))
    }

    /// The directory's ID, from its class record, or recovered from a damaged one
    /// (DirectoryIDRecovery) and reported; nil (and a report) when it is lost.
    private func checkDirectoryClass(_ path: String, relative: String, place: NamePlace?,
                                     into report: inout Report) -> [UInt8]? {
        if let record = DirectoryClassRecord.read(at: path, metadataKey: device.metadataKey) {
            if let recorded = device.recordedDirectoryClass(record.directoryID),
               record.protectionClass.strength < recorded.strength {
                report.damage.append(Damage(path: relative.isEmpty ? "." : relative,
                                            problem: "directory class record says \(record.protectionClass), the keybag \(recorded): "
                                                + "put back from before its class was raised; no file can be created in it"))
            }
            return record.directoryID
        }
        let shown = relative.isEmpty ? "." : relative
        if let id = DirectoryIDRecovery.recover(at: path, places: place.map { [$0] } ?? [], names: device.nameCipher,
                                                metadataKey: device.metadataKey) {
            report.damage.append(Damage(path: shown, problem: "directory class record damaged or forged; its ID was recovered, so its names "
                + "read, but no file can be created in it until an unlocked mount sets its class again"))
            return id
        }
        report.damage.append(Damage(path: shown, problem: "directory class record missing or forged and its ID cannot be recovered: "
            + "its names cannot be read (a salvage copies its entries under their stored names) and no file can be created in it"))
        return nil
    }
}
