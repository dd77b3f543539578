// lseek SEEK_DATA and SEEK_HOLE, so cp, tar -S and rsync --sparse see a sparse file's
// holes (which blocks are holes: BlockStore's HoleSearch.swift). Dirty mmap pages the
// kernel has not written back yet are written back first, so they are not taken for
// holes. The kernel writes them back with WRITEs and waits for them, and for reads in
// flight, so on FUSE over io_uring this request goes to a helper thread: the queue
// thread of its CPU must go on serving (ring_queues.c). Where it cannot (a queue with
// too many such requests away), or while four seeks already wait (each holds a worker
// or a helper the write-back may need), the answer is the one lseek(2) allows a
// filesystem that knows no holes: data up to the end, the hole at the end.
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
        let searchesHoles = KernelChannel.mayWaitOnKernel && startWaitingOnKernel()
        // Written-back first, outside the file's lock (the write-back comes as writes).
        if searchesHoles {
            kernel.invalidatePages(handle.inode)
            seeksWaitingOnKernel.subtract(1, ordering: .relaxed)
        }
        let position: off_t
        do throws(Errno) {
            position = try file.reading { () throws(Errno) -> off_t in
                let size = file.plainSize
                guard Int(offset) < size else { throw Errno(ENXIO) }
                guard searchesHoles else { return whence == SeekWhence.data ? offset : off_t(size) }
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

    /// Counts one more seek waiting on the kernel, unless four already do.
    private func startWaitingOnKernel() -> Bool {
        guard seeksWaitingOnKernel.add(1, ordering: .relaxed).newValue > 4 else { return true }
        seeksWaitingOnKernel.subtract(1, ordering: .relaxed)
        return false
    }
}
