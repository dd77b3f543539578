// lseek SeekWhence.data and SeekWhence.hole, so cp, tar -S and rsync --sparse see a sparse file's
// holes. A plaintext block is a hole when its whole sealed region in the backing file
// is a hole there (never written, or punched: it reads as zeros, see BlockIO.openBlock).
// A block that shares an allocated filesystem block with a neighbour counts as data:
// the answer may call zeros data, never data a hole. The last block is always sealed
// (it marks the end), so it counts as a hole when it opens to zeros only. Dirty mmap
// pages the kernel has not written back yet are written back first, so they are not
// taken for holes.
import BlockStore
import CFuse
import DataProtection
import Glibc

extension SandboxFileSystem {
    func lseek(_ offset: off_t, _ whence: Int32, _ fi: UnsafeMutablePointer<fuse_file_info>?) -> off_t {
        guard let handle = Self.handle(fi) else { return off_t(-EBADF) }
        guard whence == SeekWhence.data || whence == SeekWhence.hole else { return off_t(-EINVAL) }
        let file = handle.file
        guard offset >= 0 else { return off_t(-ENXIO) }
        // Written-back first, outside the file's lock (the write-back comes as writes).
        for path in files.withPaths(of: file) { invalidate(path) }
        return file.reading { () -> off_t in
            let size = file.plainSize
            guard Int(offset) < size else { return off_t(-ENXIO) }
            let start = Int(offset) / BlockIO.blockSize
            let zeroLast = BlockIO.lastBlockIsZeros(file.content, size: size, pool: pool)
            let found = whence == SeekWhence.data ? BlockIO.firstDataBlock(file.content, from: start, size: size, zeroLast: zeroLast)
                                            : BlockIO.firstHoleBlock(file.content, from: start, size: size, zeroLast: zeroLast)
            switch found {
            case .failure(let rc): return off_t(rc.negated)
            case .success(let block):
                let position = block * BlockIO.blockSize
                if whence == SeekWhence.data { return position < size ? off_t(max(Int(offset), position)) : off_t(-ENXIO) }
                return off_t(min(size, max(Int(offset), position)))
            }
        }
    }
}
