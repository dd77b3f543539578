#!/usr/bin/env python3
"""Concurrent workloads for Tests/scenarios/concurrency.sh. Each subcommand starts its
processes, waits for them, checks the result against the sequential expectation and
prints one line: "ok ..." (exit 0) or "FAIL ..." (exit 1). Any I/O error a worker meets
(EIO above all) is a failure, except the ENOENT a reader may meet when it races a
rename or unlink.

  regions  FILE --writers N --region BYTES --passes P --seed S [--readers R]
      N processes write their own region of one file (region sizes straddle the 4096-byte
      blocks), each pass a new random pattern in shuffled chunks; writer 0 writes through
      a MAP_SHARED mapping after its first pass. Readers read random ranges meanwhile.
      Result: the concatenation of every writer's last pattern, byte for byte.
  append   FILE --writers N --records M --size BYTES
      N processes append fixed-size records with O_APPEND. Result: N*M whole records,
      each writer's in order.
  churn    DIR --procs N --iterations M --seed S [--readers R]
      N processes create, write, fsync, rename, rename over one shared name, hard link,
      unlink, mkdir and rmdir in one directory; readers list, stat and read it meanwhile.
      Result: exactly the names the sequential runs of each process leave, with their
      contents; the shared name holds one writer's last version. A reader's ESTALE
      (a name renamed over twice while it opens it) is counted and reported, not
      failed: see the limitation posix.sh lists.
  watch    FILE --sha256 HEX --stop PATH
      Reads FILE (a file of class complete) until PATH exists: every read either fails
      with EPERM (locked) or returns exactly the expected bytes.
"""
import argparse, errno, hashlib, mmap, os, random, sys, time


def fail(message):
    print("FAIL " + message)
    sys.exit(1)


def spawn(target, *args):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = target(*args) or 0
        except OSError as e:
            print("worker %s: %s (%s)" % (target.__name__, errno.errorcode.get(e.errno, e.errno), e), flush=True)
        except Exception as e:  # noqa: BLE001 - a worker reports whatever broke it
            print("worker %s: %r" % (target.__name__, e), flush=True)
        finally:
            os._exit(code)
    return pid


def wait_all(pids):
    bad = 0
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            bad += 1
    return bad


def stop_file_reader(path, stop, seed):
    """Reads random ranges of `path` until `stop` exists; only ENOENT is tolerated."""
    rng = random.Random(seed)
    reads = 0
    while not os.path.exists(stop):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            time.sleep(0.001)
            continue
        try:
            size = os.fstat(fd).st_size
            for _ in range(20):
                os.pread(fd, rng.randint(1, 70000), rng.randint(0, max(0, size)))
                reads += 1
        finally:
            os.close(fd)
    return 0


# ------------------------------------------------------------------------- regions
def pattern(seed, writer, number, length):
    return random.Random(seed * 1000003 + writer * 1009 + number).randbytes(length)


def region_writer(path, writer, region, passes, seed):
    rng = random.Random(seed + writer)
    fd = os.open(path, os.O_RDWR)
    base = writer * region
    for number in range(passes):
        data = pattern(seed, writer, number, region)
        if writer == 0 and number > 0:
            m = mmap.mmap(fd, region, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            step = rng.choice((1, 4096, 5000))
            for start in range(0, region, step * 7):
                m[start:start + step * 7] = data[start:start + step * 7]
            m.flush()
            m.close()
            continue
        chunks, at = [], 0
        while at < region:
            n = min(region - at, rng.choice((1, 17, 4095, 4096, 4097, 9000, 30000)))
            chunks.append((at, n))
            at += n
        rng.shuffle(chunks)
        for at, n in chunks:
            if os.pwrite(fd, data[at:at + n], base + at) != n:
                raise OSError(errno.EIO, "short write")
    os.fsync(fd)
    os.close(fd)
    return 0


def regions(args):
    fd = os.open(args.file, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.close(fd)
    stop = args.file + ".stop"
    readers = [spawn(stop_file_reader, args.file, stop, args.seed + 77 + r) for r in range(args.readers)]
    writers = [spawn(region_writer, args.file, w, args.region, args.passes, args.seed) for w in range(args.writers)]
    bad = wait_all(writers)
    open(stop, "w").close()
    bad_readers = wait_all(readers)
    os.unlink(stop)
    if bad or bad_readers:
        fail("regions: %d writers and %d readers failed" % (bad, bad_readers))
    expected = b"".join(pattern(args.seed, w, args.passes - 1, args.region) for w in range(args.writers))
    for flags, how in ((0, "cached"), (os.O_DIRECT, "O_DIRECT")):
        fd = os.open(args.file, os.O_RDONLY | flags)
        got = bytearray()
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            got += chunk
        os.close(fd)
        if bytes(got) != expected:
            at = next((i for i in range(min(len(got), len(expected))) if got[i] != expected[i]), min(len(got), len(expected)))
            fail("regions: %s read differs at byte %d (region %d); %d bytes, expected %d" % (how, at, at // args.region, len(got), len(expected)))
    print("ok regions: %d writers x %d passes of %d bytes (writer 0 by mmap), %d readers: byte-exact" % (
        args.writers, args.passes, args.region, args.readers))


# ------------------------------------------------------------------------- append
def appender(path, writer, records, size):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    for number in range(records):
        head = ("w%03d r%06d " % (writer, number)).encode()
        record = head + bytes([65 + writer % 26]) * (size - len(head) - 1) + b"\n"
        if os.write(fd, record) != size:
            raise OSError(errno.EIO, "short append")
    os.close(fd)
    return 0


def append(args):
    os.close(os.open(args.file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    bad = wait_all([spawn(appender, args.file, w, args.records, args.size) for w in range(args.writers)])
    if bad:
        fail("append: %d writers failed" % bad)
    data = open(args.file, "rb").read()
    if len(data) != args.writers * args.records * args.size:
        fail("append: %d bytes, expected %d" % (len(data), args.writers * args.records * args.size))
    seen = [0] * args.writers
    for at in range(0, len(data), args.size):
        record = data[at:at + args.size]
        writer, number = int(record[1:4]), int(record[6:12])
        if number != seen[writer] or record[-1:] != b"\n" or record[13:-1] != bytes([65 + writer % 26]) * (args.size - 14):
            fail("append: record at %d is torn or out of order: %r" % (at, record[:40]))
        seen[writer] += 1
    print("ok append: %d writers x %d records of %d bytes, whole and in order" % (args.writers, args.records, args.size))


# ------------------------------------------------------------------------- churn
def churn_plan(proc, iterations, seed):
    """The names and contents one process leaves, and the versions it writes to 'shared'."""
    rng = random.Random(seed * 31 + proc)
    files, dirs, shared = {}, set(), []
    steps = []
    for i in range(iterations):
        content = ("p%d i%d %s\n" % (proc, i, rng.randbytes(rng.randint(0, 9000)).hex())).encode()
        steps.append(("create", i, content))
        files["f-%d-%d" % (proc, i)] = content
        if i % 3 == 0:
            steps.append(("share", i, content))
            shared.append(content)
            del files["f-%d-%d" % (proc, i)]
        elif i % 5 == 1:
            steps.append(("link", i, content))
            files["l-%d-%d" % (proc, i)] = content
        if i % 4 == 2 and "f-%d-%d" % (proc, i - 1) in files:
            steps.append(("unlink", i - 1, None))
            del files["f-%d-%d" % (proc, i - 1)]
        steps.append(("mkdir", i, None))
        dirs.add("d-%d-%d" % (proc, i))
        if i % 2 == 1:
            steps.append(("rmdir", i - 1, None))
            dirs.discard("d-%d-%d" % (proc, i - 1))
    return steps, files, dirs, shared


def churner(directory, proc, iterations, seed):
    steps, _, _, _ = churn_plan(proc, iterations, seed)
    for kind, i, content in steps:
        name = os.path.join(directory, "f-%d-%d" % (proc, i))
        if kind == "create":
            tmp = os.path.join(directory, ".tmp-%d-%d" % (proc, i))
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, content)
            if i % 4 == 0:
                os.fsync(fd)
            os.close(fd)
            os.rename(tmp, name)
        elif kind == "share":
            os.rename(name, os.path.join(directory, "shared"))
        elif kind == "link":
            os.link(name, os.path.join(directory, "l-%d-%d" % (proc, i)))
        elif kind == "unlink":
            os.unlink(name)
        elif kind == "mkdir":
            os.mkdir(os.path.join(directory, "d-%d-%d" % (proc, i)))
            os.close(os.open(os.path.join(directory, "d-%d-%d" % (proc, i), "x"), os.O_WRONLY | os.O_CREAT, 0o644))
            os.unlink(os.path.join(directory, "d-%d-%d" % (proc, i), "x"))
        elif kind == "rmdir":
            os.rmdir(os.path.join(directory, "d-%d-%d" % (proc, i)))
    return 0


def churn_reader(directory, stop, seed, stale_path):
    rng = random.Random(seed)
    stale = 0
    while not os.path.exists(stop):
        names = os.listdir(directory)
        for name in rng.sample(names, min(10, len(names))):
            path = os.path.join(directory, name)
            try:
                st = os.lstat(path)
                if name.startswith(("f-", "l-", "shared")):
                    with open(path, "rb") as f:
                        data = f.read()
                    if not data.startswith(b"p") or not data.endswith(b"\n"):
                        raise OSError(errno.EIO, "%s reads torn: %r" % (name, data[:30]))
                elif name.startswith("d-") and not (st.st_mode & 0o40000):
                    raise OSError(errno.EIO, "%s is not a directory" % name)
            except (FileNotFoundError, NotADirectoryError):
                pass
            except OSError as e:
                # A name renamed over twice while it is being opened: libfuse's path API
                # has forgotten the node the kernel asks about (listed by posix.sh).
                if e.errno != errno.ESTALE:
                    raise
                stale += 1
    with open(stale_path, "a") as out:
        out.write("%d\n" % stale)
    return 0


def churn(args):
    os.makedirs(args.dir, exist_ok=True)
    stop = os.path.join(os.path.dirname(args.dir.rstrip("/")), ".churn-stop")
    stale_path = os.path.join(os.path.dirname(args.dir.rstrip("/")), ".churn-stale")
    readers = [spawn(churn_reader, args.dir, stop, args.seed + r, stale_path) for r in range(args.readers)]
    bad = wait_all([spawn(churner, args.dir, p, args.iterations, args.seed) for p in range(args.procs)])
    open(stop, "w").close()
    bad_readers = wait_all(readers)
    os.unlink(stop)
    try:
        stale = sum(int(line) for line in open(stale_path))
        os.unlink(stale_path)
    except OSError:
        stale = 0
    if bad or bad_readers:
        fail("churn: %d processes and %d readers failed" % (bad, bad_readers))
    expected_files, expected_dirs, last_shared = {}, set(), []
    for p in range(args.procs):
        _, files, dirs, shared = churn_plan(p, args.iterations, args.seed)
        expected_files.update(files)
        expected_dirs |= dirs
        if shared:
            last_shared.append(shared[-1])
    names = set(os.listdir(args.dir))
    expected_names = set(expected_files) | expected_dirs | ({"shared"} if last_shared else set())
    if names != expected_names:
        fail("churn: names differ: extra %s, missing %s" % (sorted(names - expected_names)[:5], sorted(expected_names - names)[:5]))
    for name, content in expected_files.items():
        if open(os.path.join(args.dir, name), "rb").read() != content:
            fail("churn: %s has the wrong content" % name)
    if last_shared and open(os.path.join(args.dir, "shared"), "rb").read() not in last_shared:
        fail("churn: 'shared' is not any process's last version")
    links = sum(1 for n in expected_files if n.startswith("l-"))
    print("ok churn: %d processes x %d iterations, %d readers: %d files (%d hard links), %d directories as expected%s" % (
        args.procs, args.iterations, args.readers, len(expected_files), links, len(expected_dirs),
        "; readers met ESTALE %d times" % stale if stale else ""))


# ------------------------------------------------------------------------- watch
def watch(args):
    ok = refused = 0
    while not os.path.exists(args.stop):
        try:
            with open(args.file, "rb") as f:
                data = f.read()
        except PermissionError as e:
            if e.errno != errno.EPERM:
                fail("watch: %s" % e)
            refused += 1
            time.sleep(0.01)
            continue
        except OSError as e:
            if e.errno == errno.EPERM:
                refused += 1
                continue
            fail("watch: %s (%s)" % (errno.errorcode.get(e.errno), e))
        if hashlib.sha256(data).hexdigest() != args.sha256:
            fail("watch: read %d bytes that are not the file's content" % len(data))
        ok += 1
    print("ok watch: %d exact reads, %d refused with EPERM" % (ok, refused))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("regions")
    p.add_argument("file"); p.add_argument("--writers", type=int, default=8); p.add_argument("--region", type=int, default=100003)
    p.add_argument("--passes", type=int, default=4); p.add_argument("--seed", type=int, default=1); p.add_argument("--readers", type=int, default=2)
    p = sub.add_parser("append")
    p.add_argument("file"); p.add_argument("--writers", type=int, default=6); p.add_argument("--records", type=int, default=300)
    p.add_argument("--size", type=int, default=700)
    p = sub.add_parser("churn")
    p.add_argument("dir"); p.add_argument("--procs", type=int, default=6); p.add_argument("--iterations", type=int, default=60)
    p.add_argument("--seed", type=int, default=1); p.add_argument("--readers", type=int, default=2)
    p = sub.add_parser("watch")
    p.add_argument("file"); p.add_argument("--sha256", required=True); p.add_argument("--stop", required=True)
    args = parser.parse_args()
    {"regions": regions, "append": append, "churn": churn, "watch": watch}[args.command](args)


if __name__ == "__main__":
    main()
