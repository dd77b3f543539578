// Writes arriving as a libfuse buffer (write_buf): the plaintext sits in libfuse's
// per-thread request buffer, which would otherwise keep it after a lock until the
// buffer is reused. Once sealed, the plaintext of a lockable class is zeroed there.
import BlockStore
import CFuse
import FuseLoop
import DataProtection
import Glibc

extension SandboxFileSystem {
    func writeBuffer(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ bufv: UnsafeMutablePointer<fuse_bufvec>, _ offset: off_t,
                     _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let handle = Self.handle(fi) else { return reply(req, .badDescriptor) }
        let caller = Caller(req)
        let size = fuse_buf_size(bufv)
        let written: Int
        if let memory = dpfs_bufvec_memory(bufv) {
            written = write(handle, caller, memory, size, offset)
            if handle.file.protectionClass != .none { memset(memory, 0, size) }
        } else {
            // Spliced from a pipe: copy into memory of our own first, and scrub that.
            guard let copy = malloc(max(size, 1)) else { return reply(req, Errno(ENOMEM)) }
            defer { memset(copy, 0, size); free(copy) }
            let copied = dpfs_bufvec_copy(bufv, copy, size)
            guard copied >= 0 else { return reply(req, Errno(negative: copied)) }
            written = write(handle, caller, copy, copied, offset)
        }
        if written < 0 { return reply(req, Errno(negative: written)) }
        fuse_reply_write(req, written)
    }
}
