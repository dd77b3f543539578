// Writes arriving as a libfuse buffer (write_buf): the plaintext sits in libfuse's
// per-thread request buffer, which would otherwise keep it after a lock until the
// buffer is reused. Once sealed, the plaintext of a lockable class is zeroed there.
import BlockStore
import CFuse
import DataProtection
import Glibc

extension SandboxFileSystem {
    func writeBuffer(_ bufv: UnsafeMutablePointer<fuse_bufvec>, _ offset: off_t,
                     _ fi: UnsafeMutablePointer<fuse_file_info>?) -> Int32 {
        let size = fuse_buf_size(bufv)
        if let memory = dpfs_bufvec_memory(bufv) {
            let rc = write(memory.assumingMemoryBound(to: CChar.self), size, offset, fi)
            if let handle = Self.handle(fi), handle.file.protectionClass != .none { memset(memory, 0, size) }
            return rc
        }
        // Spliced from a pipe: copy into memory of our own first, and scrub that.
        guard let copy = malloc(max(size, 1)) else { return -ENOMEM }
        defer { memset(copy, 0, size); free(copy) }
        let copied = dpfs_bufvec_copy(bufv, copy, size)
        guard copied >= 0 else { return Int32(copied) }
        return write(copy.assumingMemoryBound(to: CChar.self), copied, offset, fi)
    }
}
