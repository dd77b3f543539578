// lseek SEEK_DATA and SEEK_HOLE, so cp, tar -S and rsync --sparse see a sparse file's
// holes (which blocks are holes: BlockStore's HoleSearch.swift). Dirty mmap pages the
// kernel has not written back yet are written back first, so they are not taken for
// holes.
import BlockStore
import CFuse
import DataProtection
import Glibc

extension SandboxFileSystem {
    func lseek(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ offset: off_t, _ whence: Int32,
               _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let handle = Self.handle(fi) else { return reply(req, .badDescriptor) }
        guard whence == SeekWhence.data || whence == SeekWhence.hole else { return reply(req, .invalid) }
        guard offset >= 0 else { return reply(req, Errno(ENXIO)) }
        let file = handle.file
        // Written-back first, outside the file's lock (the write-back comes as writes).
        kernel.invalidatePages(handle.inode)
        let result = file.reading { () -> Result<off_t, Errno> in
            let size = file.plainSize
            guard Int(offset) < size else { return .failure(Errno(ENXIO)) }
            let start = Int(offset) / BlockIO.blockSize
            let zeroLast = BlockIO.lastBlockIsZeros(file.content, size: size, pool: pool)
            let found = whence == SeekWhence.data
                ? BlockIO.firstDataBlock(file.content, from: start, size: size, zeroLast: zeroLast)
                : BlockIO.firstHoleBlock(file.content, from: start, size: size, zeroLast: zeroLast)
            switch found {
            case .failure(let error): return .failure(error)
            case .success(let block):
                let position = block * BlockIO.blockSize
                if whence == SeekWhence.data {
                    return position < size ? .success(off_t(max(Int(offset), position))) : .failure(Errno(ENXIO))
                }
                return .success(off_t(min(size, max(Int(offset), position))))
            }
        }
        switch result {
        case .failure(let error): reply(req, error)
        case .success(let position): fuse_reply_lseek(req, position)
        }
    }
}
