// A file's class raised (to a class that keeps its key away more of the time): the
// file gets a new key, and its content moves to it (BlockStore's Rekey). The old key
// stays wrapped under the old class in every older copy of the header, a backup's
// say; with the same key kept, such a copy would open whatever is written after the
// raise. A change to a weaker class keeps the key: what it protected was readable
// under the weaker class already.
import BlockStore
import DataProtection
import Glibc

extension SandboxFileSystem {
    /// Gives `content` (whose key is `key`, its slot `current`) a new key wrapped under
    /// `newClass`, and moves its blocks to it. Caller holds the file's lock (exclusive).
    func raiseClass(_ content: SealedFile, key: SecureBuffer, current: FileHeader.KeySlot,
                    to newClass: ProtectionClass) -> Int32 {
        // The new class must take a key now: completeUnlessOpen always does (its public
        // key wraps), as for a new file; the others only while their key is there.
        guard classTakesNewFiles(newClass) else { return -EPERM }
        let newKey = SecureBuffer.random(count: FileKeyWrap.fileKeySize)
        guard let wrapped = FileKeyWrap.wrap(newKey, fileID: content.fileID, as: newClass, device: device) else {
            newKey.wipe()
            return -EPERM
        }
        let slot = FileHeader.KeySlot(generation: current.generation + 1, protectionClass: newClass,
                                      wrappedKey: wrapped, replacesKey: true)
        let index = content.header.spareSlotIndex
        let bytes = content.header.serializedSlot(slot, index: index, metadataKey: device.metadataKey)
        let written = bytes.withUnsafeBytes { BlockIO.pwriteAll(content.fd, $0, at: FileHeader.slotOffset(index)) }
        guard written == 0, fdatasync(content.fd) == 0 else {
            newKey.wipe()
            return written != 0 ? written : -errno
        }
        content.header.slots[index] = slot
        content.protectionClass = newClass
        TestHooks.killPoint("raise-slot")
        return finishMove(content, from: key, to: newKey)
    }

    /// Finishes a raise a kill cut short, at the first use of the file's key: both
    /// slots stand, blocks are under either key. EPERM while a class is unavailable.
    func finishRekey(_ content: SealedFile) -> Errno? {
        guard let stale = content.header.staleSlotIndex, let oldSlot = content.header.slots[stale],
              let current = content.header.current else { return .io }
        let newKey: SecureBuffer
        switch unwrapKey(current, of: content.header) {
        case .failure(let error): return error
        case .success(let unwrapped): newKey = unwrapped
        }
        let oldKey: SecureBuffer
        switch unwrapKey(oldSlot, of: content.header) {
        case .failure(let error): newKey.wipe(); return error
        case .success(let unwrapped): oldKey = unwrapped
        }
        let rc = finishMove(content, from: oldKey, to: newKey)
        if rc == 0 { logger.notice("a class raise a kill interrupted is finished") }
        return rc == 0 ? nil : Errno(-rc)
    }

    /// Moves the blocks to `newKey`, then zeroes the old slot; the file's key is then
    /// `newKey`. Consumes both keys. On failure the file keeps both slots (and no key
    /// in memory): the next use tries again.
    private func finishMove(_ content: SealedFile, from oldKey: SecureBuffer, to newKey: SecureBuffer) -> Int32 {
        // The entry's key is `oldKey` when a raise comes here: wiped once the move is done.
        defer { oldKey.wipe() }
        content.key = nil
        // A lock that wipes either class stops the move at the next chunk (EPERM), and
        // the next use of the key after the unlock finishes it. completeUnlessOpen's
        // file keys may outlive a lock (an open file keeps its key), so it goes on.
        let classes = content.header.slots.compactMap { $0?.protectionClass }
        let journal = RekeyJournal(device: device.directory, fileID: content.fileID)
        let moved = Rekey.move(content, from: oldKey, to: newKey, journal: journal) {
            classes.allSatisfy(classTakesNewFiles)
        }
        guard moved == 0, let stale = content.header.staleSlotIndex else {
            newKey.wipe()
            if moved != 0 && moved != -EPERM {
                logger.error("a class raise could not move the file to its new key (errno \(-moved))")
            }
            return moved != 0 ? moved : -EIO
        }
        TestHooks.killPoint("raise-moved")
        let erased = HeaderIO.eraseSlot(content.fd, index: stale)
        if erased == 0 { content.header.slots[stale] = nil }
        // An empty file's block was read at open, under the old key; it has just been
        // opened under one key or the other, and is under the new one now.
        content.uncheckedEmptyBlock = nil
        content.key = newKey
        return erased
    }
}
