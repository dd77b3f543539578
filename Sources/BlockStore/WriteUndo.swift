// What a write near a full disk keeps of the backing range it rewrites, so that a
// failure leaves the file as it was. A pwrite that meets ENOSPC partway has already
// replaced the bytes before that point and stops inside a block, which then opens
// under no key: on a local file system that happens where the range runs from blocks
// already on disk into holes (a sparse file's gaps, which need new disk blocks). So
// the range's bytes are read first, then the range is reserved (fallocate), and when
// either the reservation or the write fails, every block that held bytes gets them
// back and every block that held zeros (a hole) is punched out again: zeros it was,
// zeros it reads, and the disk blocks the attempt took are given back. The backing
// file is then cut back to its size before, which also frees what was reserved past
// its end.
import CLinux
import Glibc
import SystemCalls

struct WriteUndo {
    let fd: Int32
    /// The backing range the write replaces.
    let range: Range<Int>
    /// The backing file's size before the write: the range's bytes past it are new.
    let oldBackingSize: Int
    /// The range's bytes before the write, up to `oldBackingSize`.
    let saved: UnsafeMutableRawBufferPointer

    /// Reads the bytes of `range` the file has into `buffer` (at least `range.count`
    /// bytes, kept until the write is done), then reserves the range. ENOSPC or EDQUOT
    /// from the reservation puts the range back as it was and is thrown.
    init(_ file: SealedFile, range: Range<Int>, oldBackingSize: Int, buffer: UnsafeMutableRawBufferPointer) throws(Errno) {
        fd = file.fd
        self.range = range
        self.oldBackingSize = oldBackingSize
        let existing = max(0, min(range.upperBound, oldBackingSize) - range.lowerBound)
        saved = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<existing])
        if existing > 0 {
            file.readsAccess(false)
            let got = try preadAll(fd, saved, at: range.lowerBound)
            guard got == existing else { throw Errno.io }
        }
        // KEEP_SIZE: ext4 grows i_size as it allocates, so a plain fallocate that
        // fails halfway would leave a size that no longer matches the blocks.
        if CLinux.fallocate(fd, FallocateMode.keepSize, off_t(range.lowerBound), off_t(range.count)) != 0 {
            let failure = Errno.current
            guard failure == .noSpace || failure == .quotaExceeded else { return }
            restore(written: false)
            throw failure
        }
    }

    /// Puts the range back as it was before the write (best effort: a disk that fails
    /// this too has nothing better to offer). `written`: whether the write may have
    /// changed bytes the file had, which are then written back; else only the holes
    /// are punched again and the file cut back.
    func restore(written: Bool = true) {
        let cipherSize = BlockIO.cipherSize
        var block = 0
        while block * cipherSize < saved.count {
            // A run of blocks alike: all held bytes, or all held zeros.
            let isHole = isZero(block)
            var end = block + 1
            while end * cipherSize < saved.count && isZero(end) == isHole { end += 1 }
            let from = block * cipherSize, to = min(end * cipherSize, saved.count)
            let part = UnsafeRawBufferPointer(rebasing: saved[from..<to])
            if isHole {
                let punch = FallocateMode.punchHole | FallocateMode.keepSize
                if CLinux.fallocate(fd, punch, off_t(range.lowerBound + from), off_t(to - from)) != 0 && written {
                    try? pwriteAll(fd, part, at: range.lowerBound + from)
                }
            } else if written {
                try? pwriteAll(fd, part, at: range.lowerBound + from)
            }
            block = end
        }
        if range.upperBound > oldBackingSize { _ = ftruncate(fd, off_t(oldBackingSize)) }
    }

    /// Whether the saved bytes of the range's `block`th block are all zeros.
    private func isZero(_ block: Int) -> Bool {
        let from = block * BlockIO.cipherSize
        let to = min(from + BlockIO.cipherSize, saved.count)
        return BlockIO.isAllZero(UnsafeRawBufferPointer(rebasing: saved[from..<to]))
    }
}
