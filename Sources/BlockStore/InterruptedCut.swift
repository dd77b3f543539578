// A shrinking truncate takes two steps: the new last block is sealed in place, then
// the backing file is cut after it. A kill between them leaves that block as neither
// the old record nor the new one (the new, shorter record followed by the old one's
// tail), which would read as EIO for good. So the header marks the cut before the
// first step and clears it after the second, and the next open with the file key
// finishes an interrupted one: if the new last block opens where the mark says, the
// file is cut there; if not, the kill came before it was written and the old content
// stands. A forged mark gains nothing: only the file key can have sealed a block that
// opens as the last one at that place.
import DataProtection
import Glibc
import SystemCalls

public enum InterruptedCut {
    /// Marks a cut to `plainSize` as begun.
    public static func begin(_ file: SealedFile, to plainSize: Int) throws(Errno) {
        try writeMark(file, plainSize)
    }

    /// Clears the mark of a cut that is done.
    public static func end(_ file: SealedFile) throws(Errno) {
        try writeMark(file, nil)
    }

    private static func writeMark(_ file: SealedFile, _ plainSize: Int?) throws(Errno) {
        try FileHeader.cutMark(plainSize).withBytes { (bytes) throws(Errno) in
            try pwriteAll(file.fd, bytes, at: FileHeader.cutMarkOffset)
        }
        file.header.pendingCut = plainSize
    }

    /// Gives the file the plaintext size it has once an interrupted cut is finished:
    /// the marked size if its last block was written, else the size it has. With
    /// `repair` the backing file is cut and the mark cleared (the mount, when it may
    /// write the file); without, only the entry in memory changes (fsck, or a backing
    /// file the daemon may only read). Caller holds the file's lock exclusively.
    public static func finish(_ file: SealedFile, key: SecureBuffer, pool: BufferPool, repair: Bool) throws(Errno) {
        guard let target = file.header.pendingCut else { return }
        if lastBlockWritten(file, key: key, for: target, pool: pool) && target < file.plainSize {
            if repair {
                try Errno.check(ftruncate(file.fd, off_t(BlockLayout.backingSize(plainSize: target))))
            }
            file.plainSize = target
        }
        guard repair else {
            file.header.pendingCut = nil
            return
        }
        try end(file)
    }

    /// Whether the block that ends a file of `plainSize` bytes is stored, sealed as the
    /// last, at its place.
    static func lastBlockWritten(_ file: SealedFile, key: SecureBuffer, for plainSize: Int, pool: BufferPool) -> Bool {
        let block = BlockLayout.lastBlock(plainSize: plainSize)
        let length = BlockLayout.plainLength(ofBlock: block, plainSize: plainSize)
        return pool.withBuffer { buffer -> Bool in
            let plain = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<length])
            let sealed = UnsafeMutableRawBufferPointer(
                rebasing: buffer[BlockIO.blockSize..<BlockIO.blockSize + length + BlockIO.overhead])
            defer { plain.initializeMemory(as: UInt8.self, repeating: 0) }
            file.readsAccess(false)
            guard (try? preadAll(file.fd, sealed, at: BlockLayout.backingOffset(ofBlock: block))) == sealed.count else {
                return false
            }
            return BlockSealer(cipher: file.header.cipher, key: key.pointer).withSession {
                BlockIO.open($0, BlockIO.AdditionalData(file.fileID), block: block, last: true,
                             sealed: UnsafeRawBufferPointer(sealed), into: plain)
            }
        }
    }
}
