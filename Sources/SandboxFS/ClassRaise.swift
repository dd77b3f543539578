// A file's class raised (to a class that keeps its key away more of the time): the
// file gets a new key, and its content moves to it (BlockStore's Rekey). The old key
// stays wrapped under the old class in every older copy of the header, a backup's
// say; with the same key kept, such a copy would open whatever is written after the
// raise. A change to a weaker class keeps the key: what it protected was readable
// under the weaker class already.
import BlockStore
import DataProtection
import Glibc
import SystemCalls

extension SandboxFileSystem {
    /// Gives `content` (whose key is `key`, its slot `current`) a new key wrapped under
    /// `newClass`, and moves its blocks to it. Caller holds the file's lock (exclusive).
    func raiseClass(_ content: SealedFile, key: SecureBuffer, current: FileHeader.KeySlot,
                    to newClass: ProtectionClass) throws(Errno) {
        // The new class must take a key now: completeUnlessOpen always does (its public
        // key wraps), as for a new file; the others only while their key is there.
        guard classTakesNewFiles(newClass) else { throw Errno.notPermitted }
        let newKey = SecureBuffer.random(count: FileKeyWrap.fileKeySize)
        guard let wrapped = FileKeyWrap.wrap(newKey, fileID: content.fileID, as: newClass, device: device) else {
            newKey.wipe()
            throw Errno.notPermitted
        }
        let slot = FileHeader.KeySlot(generation: current.generation + 1, protectionClass: newClass,
                                      wrappedKey: wrapped, replacesKey: true)
        let index = content.header.spareSlotIndex
        let bytes = content.header.serializedSlot(slot, index: index, metadataKey: device.metadataKey)
        // The move's journal takes up to a chunk of the file on disk, the one space a
        // raise needs: taken first, so that a full disk refuses the raise with the
        // file as it was, rather than halfway with a file no open can finish.
        let journal = RekeyJournal(device: device.directory, fileID: content.fileID)
        do throws(Errno) {
            try journal.reserve(forBackingSize: BlockLayout.backingSize(plainSize: content.plainSize))
            do throws(Errno) {
                try bytes.withBytes { (slotBytes) throws(Errno) in
                    try pwriteAll(content.fd, slotBytes, at: FileHeader.slotOffset(index))
                }
                try Errno.check(fdatasync(content.fd))
            } catch {
                try? journal.remove()
                throw error
            }
        } catch {
            newKey.wipe()
            throw error
        }
        content.header.slots[index] = slot
        content.protectionClass = newClass
        TestHooks.killPoint("raise-slot")
        try finishMove(content, from: key, to: newKey)
    }

    /// Finishes a raise a kill cut short, at the first use of the file's key: both
    /// slots stand, blocks are under either key. EPERM while a class is unavailable.
    func finishRekey(_ content: SealedFile, _ inode: Inode) throws(Errno) {
        guard let stale = content.header.staleSlotIndex, let oldSlot = content.header.slots[stale],
              let current = content.header.current else { throw Errno.io }
        let newKey = try unwrapKey(current, of: content.header, inode)
        let oldKey: SecureBuffer
        do throws(Errno) { oldKey = try unwrapKey(oldSlot, of: content.header, inode) } catch {
            newKey.wipe()
            throw error
        }
        try finishMove(content, from: oldKey, to: newKey)
        logger.notice("a class raise cut short (by a lock or a kill) is finished")
    }

    /// Moves the blocks to `newKey`, then zeroes the old slot; the file's key is then
    /// `newKey`. Consumes both keys. On failure the file keeps both slots (and no key
    /// in memory): the next use tries again.
    private func finishMove(_ content: SealedFile, from oldKey: SecureBuffer, to newKey: SecureBuffer) throws(Errno) {
        // The entry's key is `oldKey` when a raise comes here: wiped once the move is done.
        defer { oldKey.wipe() }
        content.key = nil
        // A lock that wipes either class stops the move at the next chunk (EPERM), and
        // the next use of the key after the unlock finishes it. completeUnlessOpen's
        // file keys may outlive a lock (an open file keeps its key), so it goes on.
        let classes = content.header.slots.compactMap { $0?.protectionClass }
        let journal = RekeyJournal(device: device.directory, fileID: content.fileID)
        do throws(Errno) {
            try Rekey.move(content, from: oldKey, to: newKey, journal: journal) { classes.allSatisfy(classTakesNewFiles) }
        } catch {
            newKey.wipe()
            if error != .notPermitted {
                logger.error("a class raise could not move the file to its new key (errno \(error.rawValue))")
            }
            throw error
        }
        guard let stale = content.header.staleSlotIndex else {
            newKey.wipe()
            throw Errno.io
        }
        TestHooks.killPoint("raise-moved")
        defer {
            // An empty file's block was read at open, under the old key; it has just been
            // opened under one key or the other, and is under the new one now.
            content.uncheckedEmptyBlock = nil
            content.key = newKey
        }
        try HeaderIO.eraseSlot(content.fd, index: stale)
        content.header.slots[stale] = nil
    }
}
