// Writes arriving as a libfuse buffer (write_buf): the plaintext sits in libfuse's
// per-thread request buffer, which would otherwise keep it after a lock until the
// buffer is reused. Once sealed, the plaintext of a lockable class is zeroed there.
import BlockStore
import CFuse
import FuseLoop
import DataProtection
import Glibc
import SystemCalls

extension SandboxFileSystem {
    func writeBuffer(_ req: fuse_req_t?, _ ino: fuse_ino_t, _ bufv: UnsafeMutablePointer<fuse_bufvec>, _ offset: off_t,
                     _ fi: UnsafeMutablePointer<fuse_file_info>?) {
        guard let handle = Self.handle(fi) else { return reply(req, .badDescriptor) }
        let caller = Caller(req)
        let size = fuse_buf_size(bufv)
        let written: Int
        if let memory = dpfs_bufvec_memory(bufv) {
            defer { if handle.file.protectionClass != .none { memset(memory, 0, size) } }
            do throws(Errno) { written = try write(handle, caller, memory, size, offset) } catch { return reply(req, error) }
        } else {
            // Spliced from a pipe: copy into memory of our own first, and scrub that.
            guard let copy = malloc(max(size, 1)) else { return reply(req, Errno(ENOMEM)) }
            defer { memset(copy, 0, size); free(copy) }
            // A negative errno (libfuse's fuse_buf_copy), the one C return turned here.
            let copied = dpfs_bufvec_copy(bufv, copy, size)
            guard copied >= 0 else { return reply(req, Errno(Int32(-copied))) }
            do throws(Errno) { written = try write(handle, caller, copy, copied, offset) } catch { return reply(req, error) }
        }
        fuse_reply_write(req, written)
    }
}
