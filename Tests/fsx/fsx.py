#!/usr/bin/env python3
"""fsx for dpfs: a seeded random-operation exerciser in the spirit of fsx (Apple/BSD).

One file under test (on the mount) and one reference file (on a plain local disk)
get the same operations -- writes, truncates, reads, writes through a MAP_SHARED
mapping, fallocate (keep-size, punch hole, zero range), SEEK_DATA/SEEK_HOLE (which
may call zeros data but never data a hole), fsync, close/reopen, O_APPEND
writes, and remounts -- and after every operation the whole file under test must equal
the reference: size and every byte, read through the open descriptor and, every few
operations, through a fresh O_DIRECT descriptor that bypasses the kernel's page cache.
Offsets and lengths are biased to the 4096-byte block boundaries of dpfs's sealed
blocks. Everything comes from the seed, so a failure replays exactly:

    fsx.py --file MOUNT/Documents/fsx --ref /tmp/ref --seed N --ops M [--remount CMD]

On a mismatch it prints the seed, the failing operation, the last operations of the
log and where the contents differ, writes the full log next to the reference
(REF.log), and exits 1. A mount that dies or an I/O error (EIO) is a failure too.
"""
import argparse, ctypes, errno, mmap, os, random, subprocess, sys, time

BLOCK = 4096
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE = 0x01, 0x02, 0x10
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def fallocate(fd, mode, offset, length):
    if libc.fallocate(fd, mode, offset, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


class Mismatch(Exception):
    pass


class Fsx:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.log = []
        self.fd = self.ref = -1
        self.append_fd = -1
        self.opened = 0

    # ---------------------------------------------------------------- helpers
    def note(self, text):
        self.log.append(text)

    def boundary(self, limit):
        """An offset in [0, limit], mostly near a block boundary."""
        r = self.rng.random()
        if r < 0.55 and limit >= 0:
            block = self.rng.randint(0, max(0, limit // BLOCK + 1))
            value = block * BLOCK + self.rng.choice((-2, -1, -1, 0, 0, 0, 1, 1, 2, 40, BLOCK - 40))
        else:
            value = self.rng.randint(0, max(0, limit))
        return max(0, min(limit, value))

    def length(self):
        r = self.rng.random()
        if r < 0.3:
            return self.rng.randint(1, 64)
        if r < 0.6:
            return self.rng.choice((BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK, 3 * BLOCK + 7))
        return self.rng.randint(1, self.args.max_len)

    def size(self):
        return os.fstat(self.ref).st_size

    def open_files(self, first=False):
        flags = os.O_RDWR | os.O_CREAT | (os.O_TRUNC if first else 0)
        self.fd = os.open(self.args.file, flags, 0o644)
        self.ref = os.open(self.args.ref, flags, 0o644)
        self.opened += 1

    def close_files(self):
        for name in ("fd", "ref", "append_fd"):
            if getattr(self, name) >= 0:
                os.close(getattr(self, name))
                setattr(self, name, -1)

    def read_all(self, fd, size):
        data = bytearray()
        while len(data) < size:
            chunk = os.pread(fd, min(1 << 20, size - len(data)), len(data))
            if not chunk:
                break
            data += chunk
        return bytes(data)

    def check(self, what, direct=False):
        expected_size = self.size()
        got_size = os.fstat(self.fd).st_size
        stat_size = os.stat(self.args.file).st_size
        if got_size != expected_size or stat_size != expected_size:
            raise Mismatch("%s: size %d (fstat) / %d (stat), expected %d" % (what, got_size, stat_size, expected_size))
        expected = self.read_all(self.ref, expected_size)
        got = self.read_all(self.fd, expected_size + 1)
        self.compare(what, got, expected)
        if direct:
            try:
                dfd = os.open(self.args.file, os.O_RDONLY | os.O_DIRECT)
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                return
            try:
                got = self.read_all(dfd, expected_size + 1)
            except OSError as e:
                if e.errno != errno.EINVAL:  # a local disk wants aligned O_DIRECT buffers
                    raise
                return
            finally:
                os.close(dfd)
            self.compare(what + " (O_DIRECT)", got, expected)

    def compare(self, what, got, expected):
        if got == expected:
            return
        at = next((i for i in range(min(len(got), len(expected))) if got[i] != expected[i]), min(len(got), len(expected)))
        raise Mismatch("%s: contents differ from byte %d (block %d, offset %d in it); got %d bytes, expected %d\n"
                       "  got      %s\n  expected %s" % (what, at, at // BLOCK, at % BLOCK, len(got), len(expected),
                                                        got[at:at + 16].hex(), expected[at:at + 16].hex()))

    # ---------------------------------------------------------------- operations
    def op_write(self):
        offset = self.boundary(self.size() + 2 * BLOCK if self.rng.random() < 0.8 else self.args.max_size)
        data = self.rng.randbytes(max(1, min(self.length(), self.args.max_size - offset)))
        self.note("write off=%d len=%d" % (offset, len(data)))
        for fd in (self.fd, self.ref):
            if os.pwrite(fd, data, offset) != len(data):
                raise Mismatch("short write")

    def op_append(self):
        data = self.rng.randbytes(self.length() if self.size() < self.args.max_size // 2 else self.rng.randint(1, 100))
        self.note("append len=%d (O_APPEND)" % len(data))
        afd = os.open(self.args.file, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(afd, data)
        finally:
            os.close(afd)
        os.pwrite(self.ref, data, self.size())

    def op_truncate(self):
        size = self.boundary(self.args.max_size)
        self.note("truncate %d (from %d)" % (size, self.size()))
        os.ftruncate(self.fd, size)
        os.ftruncate(self.ref, size)

    def op_truncate_path(self):
        size = self.boundary(self.size() + BLOCK)
        self.note("truncate by path %d (from %d)" % (size, self.size()))
        os.truncate(self.args.file, size)
        os.ftruncate(self.ref, size)

    def op_read(self):
        size = self.size()
        offset = self.boundary(size + 10)
        length = self.length()
        self.note("read off=%d len=%d" % (offset, length))
        got = os.pread(self.fd, length, offset)
        expected = os.pread(self.ref, length, offset)
        self.compare("read off=%d len=%d" % (offset, length), got, expected)

    def op_mapwrite(self):
        size = self.size()
        if size == 0:
            return self.op_write()
        offset = self.boundary(size - 1)
        length = min(self.length(), size - offset)
        data = self.rng.randbytes(length)
        self.note("mapwrite off=%d len=%d (MAP_SHARED, size %d)" % (offset, length, size))
        m = mmap.mmap(self.fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            m[offset:offset + length] = data
            if self.rng.random() < 0.7:
                m.flush()
        finally:
            m.close()
        os.pwrite(self.ref, data, offset)

    def op_mapread(self):
        size = self.size()
        if size == 0:
            return
        offset = self.boundary(size - 1)
        length = min(self.length(), size - offset)
        self.note("mapread off=%d len=%d" % (offset, length))
        m = mmap.mmap(self.fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
        try:
            got = m[offset:offset + length]
        finally:
            m.close()
        self.compare("mapread off=%d len=%d" % (offset, length), got, os.pread(self.ref, length, offset))

    def op_fallocate(self):
        size = self.size()
        mode = self.rng.choice((0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE,
                                FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE))
        offset = self.boundary(size + BLOCK)
        length = min(self.length() * self.rng.choice((1, 1, 4)), max(1, self.args.max_size - offset))
        names = {0: "alloc", 1: "alloc keep-size", 3: "punch-hole", 0x10: "zero-range", 0x11: "zero-range keep-size"}
        self.note("fallocate %s off=%d len=%d (size %d)" % (names[mode], offset, length, size))
        for fd in (self.fd, self.ref):
            fallocate(fd, mode, offset, length)

    def op_seek(self):
        """SEEK_DATA / SEEK_HOLE on the file under test may call zeros data, never
        data a hole: every byte they skip or call a hole must be zero in the reference."""
        size = self.size()
        offset = self.boundary(size + 10)
        self.note("seek data/hole from %d (size %d)" % (offset, size))
        expected = self.read_all(self.ref, size)
        def zeros(start, end, what):
            if any(expected[start:end]):
                raise Mismatch("%s from %d: [%d, %d) holds data" % (what, offset, start, end))
        try:
            data = os.lseek(self.fd, offset, os.SEEK_DATA)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
            zeros(offset, size, "SEEK_DATA gave ENXIO")
        else:
            if not offset <= data < size:
                raise Mismatch("SEEK_DATA from %d gave %d (size %d)" % (offset, data, size))
            zeros(offset, data, "SEEK_DATA")
        try:
            hole = os.lseek(self.fd, offset, os.SEEK_HOLE)
        except OSError as e:
            if e.errno != errno.ENXIO or offset < size:
                raise
        else:
            if not offset <= hole <= size:
                raise Mismatch("SEEK_HOLE from %d gave %d (size %d)" % (offset, hole, size))
            try:
                after = os.lseek(self.fd, hole, os.SEEK_DATA) if hole < size else size
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
                after = size
            zeros(hole, after, "SEEK_HOLE")

    def op_fsync(self):
        self.note("fsync")
        os.fsync(self.fd)

    def op_reopen(self):
        self.note("close and reopen")
        self.close_files()
        self.open_files()

    def op_remount(self):
        if not self.args.remount:
            return self.op_reopen()
        self.note("remount")
        self.close_files()
        done = subprocess.run(self.args.remount, shell=True, capture_output=True, text=True)
        if done.returncode != 0:
            raise Mismatch("remount failed: %s %s" % (done.stdout.strip(), done.stderr.strip()))
        self.open_files()

    # ---------------------------------------------------------------- run
    def run(self):
        weights = [(self.op_write, 30), (self.op_read, 12), (self.op_truncate, 8), (self.op_truncate_path, 3),
                   (self.op_mapwrite, 10), (self.op_mapread, 4), (self.op_append, 6), (self.op_fallocate, 8),
                   (self.op_seek, 3), (self.op_fsync, 3), (self.op_reopen, 3)]
        ops = [op for op, weight in weights for _ in range(weight)]
        self.open_files(first=True)
        self.note("open (O_TRUNC) %s" % self.args.file)
        step = 0
        try:
            for step in range(1, self.args.ops + 1):
                if self.args.remount_every and step % self.args.remount_every == 0:
                    op = self.op_remount
                else:
                    op = self.rng.choice(ops)
                op()
                self.check("after op %d (%s)" % (step, self.log[-1] if self.log else "?"), direct=step % 25 == 0)
            self.op_remount() if self.args.remount else self.op_reopen()
            self.check("after the final %s" % ("remount" if self.args.remount else "reopen"), direct=True)
        except Exception as failure:  # noqa: BLE001 - any failure is reported with its seed and log
            self.report(step, failure)
            return 1
        finally:
            self.close_files()
        print("fsx: seed %d: %d operations, %d opens, final size %d: ok" % (self.args.seed, self.args.ops, self.opened,
                                                                           os.stat(self.args.ref).st_size))
        return 0

    def report(self, step, failure):
        replay = "fsx.py --file FILE --ref REF --seed %d --ops %d" % (self.args.seed, step)
        if self.args.remount_every:
            replay += " --remount-every %d --remount CMD" % self.args.remount_every
        print("fsx: FAILED at operation %d of seed %d: %s" % (step, self.args.seed, failure))
        print("fsx: replay with: %s   (max-size %d, max-len %d)" % (replay, self.args.max_size, self.args.max_len))
        print("fsx: last operations:")
        for index, text in enumerate(self.log[-self.args.tail:], start=max(0, len(self.log) - self.args.tail)):
            print("  %5d %s" % (index, text))
        log_path = self.args.ref + ".log"
        try:
            with open(log_path, "w") as out:
                out.write("seed %d\n" % self.args.seed)
                out.writelines("%d %s\n" % (i, t) for i, t in enumerate(self.log))
            print("fsx: full log in %s" % log_path)
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", required=True, help="the file under test (on the mount)")
    parser.add_argument("--ref", required=True, help="the reference file (on a plain disk)")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--max-size", type=int, default=768 * 1024, help="largest file size")
    parser.add_argument("--max-len", type=int, default=64 * 1024, help="largest single write")
    parser.add_argument("--remount", default="", help="shell command that unmounts, mounts and unlocks")
    parser.add_argument("--remount-every", type=int, default=0, help="remount every N operations")
    parser.add_argument("--tail", type=int, default=25, help="operations shown on failure")
    args = parser.parse_args()
    sys.exit(Fsx(args).run())


if __name__ == "__main__":
    main()
