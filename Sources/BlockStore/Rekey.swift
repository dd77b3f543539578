// A file's content moved in place from its key to a new one: what a class raise does,
// so that an older copy of the header, whose slot wraps the old key under the old
// (lower) class, opens nothing written after the raise. Crash-safe with the header's
// two slots: the new key's slot (replacesKey) is written and synced first, and the
// old slot is zeroed only once every block is under the new key. Each block is tried
// under the new key first, so a move a crash cut short is finished by the next one;
// each chunk is journaled before it is rewritten (RekeyJournal), so a block torn by a
// kill or a power cut mid-write is put back whole.
import DataProtection
import Glibc
import SystemCalls

public enum Rekey {
    /// Blocks read, journaled and written at once: 4 MiB, so that a GiB costs 256
    /// journal syncs and as many data syncs.
    static let chunkBlocks = 1024

    /// Reseals every block of `file` still sealed under `oldKey` with `newKey`, in
    /// place, then syncs. Holes stay holes, and so does a block that opens under
    /// neither key (damaged under any). Between chunks it asks `mayGoOn`: false (a
    /// lock is wiping the classes) stops it with EPERM, so that a lock never waits for
    /// more than a chunk. On EPERM or an error from the disk the file is left with
    /// blocks under both keys, which its two slots still open. Caller holds the file's
    /// lock (exclusive).
    public static func move(_ file: SealedFile, from oldKey: SecureBuffer, to newKey: SecureBuffer,
                            journal: RekeyJournal, mayGoOn: () -> Bool) throws(Errno) {
        try journal.restore(into: file.fd)
        let size = file.plainSize
        let lastBlock = BlockLayout.lastBlock(plainSize: size)
        let ad = BlockIO.AdditionalData(file.fileID)
        let old = BlockSealer(cipher: file.header.cipher, key: oldKey.pointer)
        let new = BlockSealer(cipher: file.header.cipher, key: newKey.pointer)
        let plain = SecureBuffer(count: BlockLayout.plainBlockSize)
        defer { plain.wipe() }
        var sealed = [UInt8](repeating: 0, count: chunkBlocks * BlockLayout.cipherBlockSize)
        file.readsAccess(false)
        var first = 0
        while first <= lastBlock {
            let end = min(first + chunkBlocks, lastBlock + 1)
            let start = BlockLayout.backingOffset(ofBlock: first)
            let length = BlockLayout.backingOffset(ofBlock: end - 1) - start
                + BlockLayout.plainLength(ofBlock: end - 1, plainSize: size) + BlockLayout.blockOverhead
            try sealed.withMutableBytes { (chunk) throws(Errno) in
                let got = try preadAll(file.fd, UnsafeMutableRawBufferPointer(rebasing: chunk[0..<length]), at: start)
                guard got == length else { throw Errno.io }
                try journal.record(UnsafeRawBufferPointer(rebasing: chunk[0..<length]), at: start)
                // The blocks resealed: written back in one pwrite when every block of the
                // chunk was (the usual case), else each alone, so holes stay holes.
                var resealed: [Range<Int>] = []
                for block in first..<end {
                    let at = BlockLayout.backingOffset(ofBlock: block) - start
                    let count = BlockLayout.plainLength(ofBlock: block, plainSize: size)
                    let range = at..<at + count + BlockLayout.blockOverhead
                    let moved = moveBlock(UnsafeMutableRawBufferPointer(rebasing: chunk[range]), block: block,
                                          last: block == lastBlock, plainCount: count, ad: ad, old: old, new: new, plain: plain)
                    if moved { resealed.append(range) }
                }
                let writes = resealed.count == end - first ? [0..<length] : resealed
                for (index, range) in writes.enumerated() {
                    var bytes = UnsafeRawBufferPointer(rebasing: chunk[range])
                    if index == 0 && TestHooks.killPointReached("rekey-torn") {
                        // As a kill in the middle of the write leaves it: cut inside a block.
                        bytes = UnsafeRawBufferPointer(rebasing: bytes[0..<bytes.count / 2 + 100])
                    }
                    try pwriteAll(file.fd, bytes, at: start + range.lowerBound)
                    TestHooks.killPoint("rekey-torn")
                }
                try Errno.check(fdatasync(file.fd))
                try journal.void()
            }
            TestHooks.killPoint("rekey-chunk")
            first = end
            if first <= lastBlock && !mayGoOn() { throw Errno.notPermitted }
        }
        try journal.remove()
    }

    /// Reseals one block in `sealed` under `new` if it opens under `old`: true if it was
    /// resealed, false if it is a hole, already under `new`, or opens under neither (it
    /// reads as EIO either way, and is left as it is).
    private static func moveBlock(_ sealed: UnsafeMutableRawBufferPointer, block: Int, last: Bool, plainCount: Int,
                                  ad: BlockIO.AdditionalData, old: BlockSealer, new: BlockSealer,
                                  plain: SecureBuffer) -> Bool {
        if !last && BlockIO.isAllZero(UnsafeRawBufferPointer(sealed)) { return false }
        let output = UnsafeMutableRawBufferPointer(rebasing: plain.mutableBytes[0..<plainCount])
        let opensUnderNew = new.withSession {
            BlockIO.open($0, ad, block: block, last: last, sealed: UnsafeRawBufferPointer(sealed), into: output)
        }
        if opensUnderNew { return false }
        let opensUnderOld = old.withSession {
            BlockIO.open($0, ad, block: block, last: last, sealed: UnsafeRawBufferPointer(sealed), into: output)
        }
        guard opensUnderOld else { return false }
        Sodium.fillRandom(UnsafeMutableRawBufferPointer(rebasing: sealed[0..<new.cipher.nonceSize]))
        new.withSession {
            BlockIO.seal($0, ad, block: block, last: last, plain: UnsafeRawBufferPointer(output), into: sealed)
        }
        return true
    }
}
