// Whole-buffer positioned reads and writes: the loops around pread and pwrite that a
// short transfer or a signal (EINTR) needs, with a failure thrown as its errno.
import Glibc

/// Reads into all of `buffer` from `offset`, or up to the end of the file: how many
/// bytes were read (fewer than asked only at the end).
@inline(__always)
public func preadAll(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(Errno) -> Int {
    var done = 0
    while done < buffer.count {
        let n = pread(fd, buffer.baseAddress.unsafelyUnwrapped + done, buffer.count - done, off_t(offset + done))
        if n < 0 { if errno == EINTR { continue }; throw Errno.current }
        if n == 0 { break }
        done += n
    }
    return done
}

/// Writes all of `buffer` at `offset`, in writes of at most `partSize` bytes.
@inline(__always)
public func pwriteAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int,
                      partSize: Int = .max) throws(Errno) {
    var done = 0
    while done < buffer.count {
        let n = pwrite(fd, buffer.baseAddress.unsafelyUnwrapped + done, min(buffer.count - done, partSize),
                       off_t(offset + done))
        if n < 0 { if errno == EINTR { continue }; throw Errno.current }
        done += n
    }
}
