// lseek SEEK_DATA and SEEK_HOLE, so cp, tar -S and rsync --sparse see a sparse file's
// holes (which blocks are holes: BlockStore's HoleSearch.swift). Dirty mmap pages the
// kernel has not written back yet are written back first, so they are not taken for
// holes. The kernel writes them back with WRITEs and waits for them, and for reads in
// flight, so on FUSE over io_uring this request goes to a helper thread: the queue
// thread of its CPU must go on serving (ring_queues.c).
import BlockStore
import CFuse
import DataProtection
import Glibc
import SystemCalls

extension SandboxFileSystem {
    func lseek(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ offset: off_t, _ whence: Int32,
               _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let handle = Self.handle(fi) else { return reply(req, .badDescriptor) }
        guard whence == SeekWhence.data || whence == SeekWhence.hole else { return reply(req, .invalid) }
        guard offset >= 0 else { return reply(req, Errno(ENXIO)) }
        let file = handle.file
        // Written-back first, outside the file's lock (the write-back comes as writes).
        kernel.invalidatePages(handle.inode)
        let position: off_t
        do throws(Errno) {
            position = try file.reading { () throws(Errno) -> off_t in
                let size = file.plainSize
                guard Int(offset) < size else { throw Errno(ENXIO) }
                let start = Int(offset) / BlockIO.blockSize
                let zeroLast = BlockIO.lastBlockIsZeros(file.content, size: size, pool: pool)
                let block = whence == SeekWhence.data
                    ? try BlockIO.firstDataBlock(file.content, from: start, size: size, zeroLast: zeroLast)
                    : try BlockIO.firstHoleBlock(file.content, from: start, size: size, zeroLast: zeroLast)
                let position = block * BlockIO.blockSize
                if whence == SeekWhence.data {
                    guard position < size else { throw Errno(ENXIO) }
                    return off_t(max(Int(offset), position))
                }
                return off_t(min(size, max(Int(offset), position)))
            }
        } catch {
            return reply(req, error)
        }
        fuse_reply_lseek(req, position)
    }
}
