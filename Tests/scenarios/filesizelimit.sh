#!/usr/bin/env bash
# A daemon started under a file-size limit (`ulimit -f` in the shell that mounts): a
# write that takes a backing file past it fails with EFBIG ("File too large") and the
# daemon serves on; before, SIGXFSZ ended it and left the mount dead. Then, without a
# limit, the largest file the block layout holds (a little under 2^63 bytes): a
# write, truncate, fallocate or copy_file_range past it fails with EFBIG and changes
# nothing; before, the daemon trapped on an overflow and the mount answered ENOTCONN.
source "$(dirname "$0")/lib.sh"

"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS" >/dev/null || { fail "init"; finish; }
# 1024-byte blocks: 800 KiB for every file the daemon writes.
( ulimit -f 800 && mount_device ) || { fail "mount under ulimit -f"; finish; }
unlock_device
D="$MNT/Documents"
PID=$(daemon_pid)

head -c 500000 /dev/urandom > "$WORK/small"
head -c 1200000 /dev/urandom > "$WORK/large"
check "a file within the limit is written" cp "$WORK/small" "$D/small.bin"
error=$(cp "$WORK/large" "$D/large.bin" 2>&1)
check "one past it fails" test -n "$error"
check "with EFBIG" grep -q "File too large" <<< "$error"
check "the daemon serves on" kill -0 "$PID"
check "the mount answers" "$DPFS" status "$MNT"
check "the file within the limit reads back" cmp "$WORK/small" "$D/small.bin"
check "a new file within the limit is written" cp "$WORK/small" "$D/again.bin"
check "and reads back" cmp "$WORK/small" "$D/again.bin"
"$DPFS" unmount "$MNT"
check "fsck finds nothing torn" "$DPFS" fsck "$DEV" --passcode-file "$PASS"

mount_device
unlock_device
PID=$(daemon_pid)
head -c 5000 /dev/urandom > "$WORK/edge"
cp "$WORK/edge" "$D/edge.bin" && cp "$WORK/edge" "$D/source.bin" || fail "write the files at the edge"
# past_the_end CALL: runs CALL on descriptor fd of edge.bin (src: source.bin); its errno's name.
past_the_end() {
    python3 -c '
import errno, os, sys
try:
    fd = os.open(sys.argv[1] + "/edge.bin", os.O_RDWR)
    src = os.open(sys.argv[1] + "/source.bin", os.O_RDONLY)
    exec(sys.argv[2])
    print("no error")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$D" "$1"
}
for call in "os.pwrite(fd, b'x', 2**63 - 2)" "os.ftruncate(fd, 2**63 - 1)" "os.posix_fallocate(fd, 2**63 - 102, 50)" \
            "os.copy_file_range(src, fd, 1, 0, 2**63 - 2)"; do
    expect_eq "$call fails with EFBIG" "$(past_the_end "$call")" EFBIG
    check "the file is unchanged after $call" cmp "$WORK/edge" "$D/edge.bin"
    expect_eq "the same daemon serves on after $call" "$(daemon_pid)" "$PID"
    # A daemon that died is replaced (mount takes its dead mount down), so that each
    # call is tried on its own.
    if [ "$(daemon_pid)" != "$PID" ]; then
        within 60 sh -c "! kill -0 $PID" || fail "the daemon that died is gone"
        mount_device && unlock_device && PID=$(daemon_pid)
    fi
done
check "the mount answers" "$DPFS" status "$MNT"
"$DPFS" unmount "$MNT"
check "fsck finds nothing torn at the edge" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
finish
