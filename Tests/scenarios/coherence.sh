#!/usr/bin/env bash
# A file created for writing only is written past the page cache (direct I/O, where the
# kernel is Linux 6.6 or later: FileOperations `install`). What it spares: the
# getxattr of security.capability before the first write, and the copy into pages.
# What must hold all the same: another open of the file, its cached pages and its
# mapping see every write; set-ID bits still go at the first write; tar and cp give
# back what they were given.
source "$(dirname "$0")/lib.sh"

require_tools python3 strace
# Others may use the mount: one check writes as another user.
MOUNT_ARGS="-o allow_other" setup_device
unlock_device
S="$MNT/Documents"
daemon=$(daemon_pid)

out=$(python3 - "$S/shared" <<'PY'
import mmap, os, sys
path = sys.argv[1]
writer = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
os.write(writer, b"a" * 10000)
reader = os.open(path, os.O_RDONLY)
before = os.pread(reader, 20000, 0)          # now in the reader's cached pages
mapped = mmap.mmap(reader, 0, prot=mmap.PROT_READ)
os.pwrite(writer, b"BBBB", 4106)             # inside a cached page
os.pwrite(writer, b"CCCC", 0)
os.write(writer, b"tail")                    # past the end the reader knew
after = os.pread(reader, 20000, 0)
again = os.pread(os.open(path, os.O_RDONLY), 20000, 0)
print(len(before), before[:4].decode(), after[:4].decode(), after[4106:4110].decode(), after[-4:].decode(), len(after),
      again[:4].decode(), again[-4:].decode(), mapped[:4].decode(), mapped[4106:4110].decode())
PY
)
expect_eq "a reader's cached pages, a new open and a mapping see the writer's changes" \
    "$out" "10000 aaaa CCCC BBBB tail 10004 CCCC tail CCCC BBBB"

out=$(python3 - "$S/existing" <<'PY'
import os, sys
path = sys.argv[1]
fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)   # a cached handle
os.write(fd, b"old " * 2000); os.close(fd)
reader = os.open(path, os.O_RDONLY)
before = os.pread(reader, 10000, 0)
writer = os.open(path, os.O_WRONLY | os.O_TRUNC)                # cp over it
os.write(writer, b"new " * 1000); os.close(writer)
after = os.pread(reader, 10000, 0)
log = os.open(path, os.O_WRONLY | os.O_APPEND)                  # a logger
os.write(log, b"line\n")
tail = os.pread(reader, 10000, 4000)
print(len(before), before[:4].decode(), len(after), after[:4].decode(), tail.decode().strip())
PY
)
expect_eq "an existing file rewritten and appended to through write-only opens: its reader sees both" \
    "$out" "8000 old  4000 new  line"

# The kernel's getxattr before a first write: none for a write-only create (tar's
# kind), one for a create that can also read (the kernel's cached path asks).
trace_getxattrs() {  # $1: python open flags; prints the daemon's GETXATTR requests
    local connection
    connection=$(findmnt -n -o MAJ:MIN --target "$MNT" | tr -d ' ' | sed -n 's/^0:\([0-9]*\)$/\1/p')
    echo 0 > /sys/kernel/tracing/events/fuse/fuse_request_send/enable
    echo > /sys/kernel/tracing/trace
    echo 1 > /sys/kernel/tracing/tracing_on
    echo 1 > /sys/kernel/tracing/events/fuse/fuse_request_send/enable
    python3 - "$S/traced" "$1" "${REOPEN:-}" <<'PY'
import os, sys
for i in range(10):
    name = f"{sys.argv[1]}.{sys.argv[2]}.{i}"
    fd = os.open(name, (0 if sys.argv[3] else os.O_CREAT | os.O_EXCL) | getattr(os, sys.argv[2]), 0o644)
    os.write(fd, b"x" * 5000)
    os.close(fd)
PY
    echo 0 > /sys/kernel/tracing/events/fuse/fuse_request_send/enable
    grep -c "connection $connection req .*FUSE_GETXATTR" /sys/kernel/tracing/trace
}
if [ -e /sys/kernel/tracing/events/fuse/fuse_request_send/enable ] \
    && [ "$(printf '%s\n' "$(uname -r)" 6.6 | sort -V | head -1)" = 6.6 ]; then
    expect_eq "10 files created write-only and written: no getxattr" "$(trace_getxattrs O_WRONLY)" "0"
    expect_eq "10 files reopened write-only and written: no getxattr" "$(REOPEN=1 trace_getxattrs O_WRONLY)" "0"
    expect_eq "10 created read-write and written: the kernel asks once each" "$(trace_getxattrs O_RDWR)" "10"
else
    log "no fuse tracepoints or a kernel before 6.6 here: getxattr counts not checked"
fi

chmod_out=$(mode_after_other_users_write "$S/setid")
expect_eq "a write by another user still takes set-user-ID and set-group-ID away" "$chmod_out" "0o755"

mkdir -p "$WORK/src/d"
head -c 300000 /dev/urandom > "$WORK/src/big"
for i in $(seq 40); do head -c $((i * 997)) /dev/urandom > "$WORK/src/d/f$i"; done
tar cf "$WORK/src.tar" -C "$WORK" src
check "tar extracts into the mount" tar xf "$WORK/src.tar" -C "$S"
check "and every file reads back as it was" diff -r "$WORK/src" "$S/src"
check "cp of a large file" cp "$WORK/src/big" "$S/big"
check "reads back" cmp "$WORK/src/big" "$S/big"
finish
