#!/usr/bin/env bash
# FUSE over io_uring (Sources/FuseLoop/ring_queues.c). Where the kernel's fuse module offers
# it (its enable_uring parameter, set here for the scenario and put back after), the
# daemon takes it unless DPFS_IO_URING=0 opts out: one queue per possible CPU, and
# requests served through them; status names the transport. What must hold all the
# same: data written in 1 MiB requests and small ones reads back, long listings,
# extended attributes, a lock that revokes (its notifications still go to /dev/fuse)
# and leaves no plaintext read through the queues in memory, set-ID bits dropped by
# another user's write, tar in and out; the queue threads run under SCHED_IDLE with
# best-effort I/O (or the daemon's own I/O priority); and the daemon ends on unmount,
# SIGTERM and SIGKILL (its mount then left failing closed). Without the parameter: no
# queues.
source "$(dirname "$0")/lib.sh"

PARAM=/sys/module/fuse/parameters/enable_uring
if [ ! -w "$PARAM" ]; then
    log "this kernel has no FUSE over io_uring (Linux 6.14+ with CONFIG_FUSE_IO_URING): skipped"
    finish
fi
ORIGINAL=$(cat "$PARAM")
scenario_cleanup() {
    [ -n "${READER:-}" ] && kill "$READER" 2>/dev/null
    echo "$ORIGINAL" > "$PARAM"
}

# Threads of process $1 named $2 (the daemon names its ring threads and helpers).
threads_named() { grep -lx "$2" /proc/"$1"/task/*/comm 2>/dev/null | wc -l; }
# Names of the threads of process $1 under SCHED_IDLE (policy 5, /proc's 41st field).
idle_class_threads() {
    local task
    for task in /proc/"$1"/task/*; do
        [ "$(sed 's/.*) //' "$task/stat" 2>/dev/null | awk '{print $39}')" = 5 ] && cat "$task/comm"
    done
}
# How many of process $1's queue threads have the I/O priority $2 (as ionice says it).
ring_threads_with_io() {
    local task count=0
    for task in /proc/"$1"/task/*; do
        [ "$(cat "$task/comm" 2>/dev/null)" = dpfs-ring ] || continue
        [ "$(ionice -p "${task##*/}" 2>/dev/null)" = "$2" ] && count=$((count + 1))
    done
    echo "$count"
}
ring_fds() { ls -l "/proc/$1/fd" 2>/dev/null | grep -c 'anon_inode:\[io_uring\]'; }
# Completions the daemon's rings have posted, all queues together.
ring_completions() {
    local fd total=0
    for fd in $(ls -l "/proc/$1/fd" | awk '/anon_inode:\[io_uring\]/ {print $9}'); do
        total=$((total + $(sed -n 's/^CqTail:[[:space:]]*//p' "/proc/$1/fdinfo/$fd")))
    done
    echo "$total"
}
possible=$(awk -F, '{n = 0; for (i = 1; i <= NF; i++) { split($i, r, "-"); top = (r[2] != "" ? r[2] : r[1]); if (top + 1 > n) n = top + 1 } print n}' /sys/devices/system/cpu/possible)

echo N > "$PARAM"
export DPFS_IO_URING=1
MOUNT_ARGS="-o allow_other" setup_device
expect_eq "without enable_uring the daemon makes no queue" "$(ring_fds "$(daemon_pid)")" "0"
"$DPFS" unmount "$MNT" || fail "unmount"

echo Y > "$PARAM"
DPFS_IO_URING=0 MOUNT_ARGS="-o allow_other" mount_device
expect_eq "with it but DPFS_IO_URING=0, none either" "$(ring_fds "$(daemon_pid)")" "0"
check "it serves through /dev/fuse" ls "$MNT/Documents"
expect_eq "status says /dev/fuse" "$("$DPFS" status "$MNT" --json | sed -n 's/.*"transport":"\([^"]*\)".*/\1/p')" '\/dev\/fuse'
expect_eq "and so does its plain form" "$("$DPFS" status "$MNT" | sed -n 's/^transport: //p')" "/dev/fuse"
"$DPFS" unmount "$MNT" || fail "unmount"

DPFS_IO_URING= MOUNT_ARGS="-o allow_other" mount_device
check "without the variable: io_uring, taken as the kernel offers it" test "$(ring_fds "$(daemon_pid)")" -eq "$possible"
unlock_device
echo through > "$MNT/Documents/auto.txt"
expect_eq "status says io_uring" "$("$DPFS" status "$MNT" --json | sed -n 's/.*"transport":"\([^"]*\)".*/\1/p')" "io_uring"
expect_eq "and so does its plain form" "$("$DPFS" status "$MNT" | sed -n 's/^transport: //p')" "io_uring"
"$DPFS" unmount "$MNT" || fail "unmount"

MOUNT_ARGS="-o allow_other" mount_device
unlock_device
daemon=$(daemon_pid)
S="$MNT/Documents"
expect_eq "with it, one queue per possible CPU ($possible)" "$(ring_fds "$daemon")" "$possible"

before=$(ring_completions "$daemon")
python3 - "$S/many" <<'PY'
import os, sys
os.mkdir(sys.argv[1])
for i in range(1000):
    fd = os.open(f"{sys.argv[1]}/file-{i:04d}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, str(i).encode())
    os.close(fd)
PY
served=$(( $(ring_completions "$daemon") - before ))
if [ "$served" -ge 3000 ]; then pass "1,000 creates were served through the queues ($served requests)"
else fail "1,000 creates were served through the queues" "only $served requests came through them"; fi
expect_eq "a listing of 1,000 names (READDIRPLUS replies of many KiB)" \
    "$(ls "$S/many" | wc -l) $(ls "$S/many" | head -1) $(ls "$S/many" | tail -1)" "1000 file-0000 file-0999"
expect_eq "and their contents" "$(cat "$S/many/file-0777")" "777"

head -c $((8 * 1024 * 1024 + 12345)) /dev/urandom > "$WORK/big"
check "8 MiB written in 1 MiB requests" dd if="$WORK/big" of="$S/big" bs=1M status=none
# Even from a single writer, 1 MiB writes go to helpers: their sealing would otherwise
# take the writer's own CPU (nothing before this point is large or concurrent).
expect_eq "which go to helper threads even from one writer" \
    "$([ "$(threads_named "$daemon" dpfs-ring-io)" -gt 0 ] && echo yes)" "yes"
check "read back in 1 MiB requests" cmp "$WORK/big" "$S/big"
out=$(python3 - "$S/patched" <<'PY'
import mmap, os, random, sys
random.seed(7)
model = bytearray(os.urandom(300000))
fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
os.write(fd, model)
for _ in range(300):
    at, size = random.randrange(0, 320000), random.randrange(1, 9000)
    data = os.urandom(size)
    os.pwrite(fd, data, at)
    if at > len(model): model.extend(bytes(at - len(model)))
    model[at:at + size] = data
os.close(fd)
fd = os.open(sys.argv[1], os.O_RDONLY)
mapped = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
print(os.pread(fd, len(model) + 10, 0) == bytes(model), mapped[:] == bytes(model))
PY
)
expect_eq "300 small writes at random offsets read back, by read and by mapping" "$out" "True True"

# Reads and writes go to helper threads when others wait behind them, so that a queue's
# thread never waits on the disk; its queue then registers more entries.
for i in $(seq 8); do head -c $((3 * 1024 * 1024 + i)) /dev/urandom > "$WORK/par$i"; done
pids=()
for i in $(seq 8); do taskset -c 0 cp "$WORK/par$i" "$S/par$i" & pids+=($!); done
written=0
for pid in "${pids[@]}"; do wait "$pid" && written=$((written + 1)); done
echo 3 > /proc/sys/vm/drop_caches
pids=()
for i in $(seq 8); do taskset -c 0 cmp -s "$WORK/par$i" "$S/par$i" & pids+=($!); done
same=0
for pid in "${pids[@]}"; do wait "$pid" && same=$((same + 1)); done
expect_eq "8 writers, then 8 readers at once on one CPU: every file intact" "$written $same" "8 8"
helpers=$(threads_named "$daemon" dpfs-ring-io)
if [ "$helpers" -ge 1 ]; then pass "their reads and writes were served by helper threads ($helpers)"
else fail "their reads and writes were served by helper threads" "no dpfs-ring-io thread"; fi
expect_eq "beside one queue thread per CPU" "$(threads_named "$daemon" dpfs-ring)" "$possible"
# Under SCHED_IDLE a queue thread leaves its CPU to the caller its reply wakes, which
# the scheduler otherwise moved to another CPU at nearly every request (ring_queues.c).
expect_eq "every queue thread runs under SCHED_IDLE" "$(idle_class_threads "$daemon" | grep -cx dpfs-ring)" "$possible"
# Left unset, a SCHED_IDLE thread's I/O class is idle too: its disk reads then waited
# behind every other I/O (a cold rm -rf of the bench tree 3.0 s, not 0.8).
expect_eq "and does best-effort I/O" "$(ring_threads_with_io "$daemon" "best-effort: prio 4")" "$possible"

# A read's reply (file contents) goes through an entry's payload buffer: gone once
# committed, so a lock finds none of it (as hygiene.sh checks on /dev/fuse).
MARK="RING-$$-$RANDOM-PLAINTEXT"
{ for i in $(seq 1 3000); do echo "$MARK $i"; done; } > "$S/marked"
setfattr -n user.dpfs.protection -v complete "$S/marked"
echo 3 > /proc/sys/vm/drop_caches   # the reads must reach the daemon
expect_eq "a complete file read through the queues" "$(grep -c "$MARK" "$S/marked")" "3000"
scan() { python3 "$(dirname "$0")/../tools/memscan.py" "$daemon" "$DEV" "$PASS" --text "$MARK" | grep "^text"; }
# Reads go on through the queues while the scan runs: a daemon idle for a quarter of a
# second gives its buffers back, and the scan's own start (the passcode's KDF) took
# about that long once under the full suite's load.
( while :; do dd if="$S/marked" iflag=direct of=/dev/null bs=64k status=none; done ) &
READER=$!
expect_eq "the scan finds its text in the daemon before the lock (the search works)" \
    "$(exec 5<"$S/marked"; scan)" "text $MARK present"
kill "$READER"; wait "$READER" 2>/dev/null; READER=""

printf 'secret\n' > "$S/diary"
check "a class set through setxattr" setfattr -n user.dpfs.protection -v complete "$S/diary"
expect_eq "and read back" "$(getfattr --only-values -n user.dpfs.protection "$S/diary")" "complete"
check "lock" "$DPFS" lock "$MNT" --now
check_error "a complete file is refused while locked" "Operation not permitted" cat "$S/diary"
expect_eq "and the daemon's memory holds none of the text it read" "$(scan)" "text $MARK absent"
check "unlock" "$DPFS" unlock "$MNT" --passcode-file "$PASS"
expect_eq "and reads again after unlock" "$(cat "$S/diary")" "secret"

out=$(mode_after_other_users_write "$S/setid")
expect_eq "a write by another user takes set-user-ID and set-group-ID away" "$out" "0o755"

mkdir -p "$WORK/src/d"
for i in $(seq 60); do head -c $((i * 1531)) /dev/urandom > "$WORK/src/d/f$i"; done
tar cf "$WORK/src.tar" -C "$WORK" src
check "tar extracts into the mount" tar xf "$WORK/src.tar" -C "$S"
check "and every file reads back as it was" diff -r "$WORK/src" "$S/src"
check "tar reads it out again" tar cf "$WORK/out.tar" -C "$S" src
# O_TMPFILE comes as FUSE_TMPFILE through the queues too (handed to create).
out=$(python3 - "$S" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR, 0o600)
os.write(fd, b"unnamed")
rc = libc.linkat(-100, f"/proc/self/fd/{fd}".encode(), -100, os.path.join(sys.argv[1], "named").encode(), 0x400)
print(os.fstat(fd).st_nlink if rc == 0 else os.strerror(ctypes.get_errno()))
PY
)
expect_eq "an O_TMPFILE is made and linked through the queues" "$out $(cat "$S/named")" "1 unnamed"
check "rm -rf through the queues" rm -rf "$S/src" "$S/many"
# A thread inherits its creator's class: the helpers that serve requests for the queues
# (ring and seal helpers, reapers) were started by ordinary threads, so they are ordinary.
expect_eq "no other thread of the daemon is idle-class" "$(idle_class_threads "$daemon" | grep -vx dpfs-ring | sort | uniq -c)" ""

gone_within() {  # $1: pid; true when it has exited within 10 s
    for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    return 1
}
check "unmount" "$DPFS" unmount "$MNT"
check "the daemon ends after unmount" gone_within "$daemon"

# Started under ionice, whose class every thread inherits: the queue threads keep it.
ionice -c 2 -n 7 "$DPFS" mount "$DEV" "$MNT" >/dev/null || { fail "mount under ionice"; finish; }
daemon=$(daemon_pid)
expect_eq "mounted again: the queues again" "$(ring_fds "$daemon")" "$possible"
expect_eq "started under ionice -c 2 -n 7, they keep that I/O priority" \
    "$(ring_threads_with_io "$daemon" "best-effort: prio 7")" "$possible"
# Ended while reads are with the helpers: the queues take no new hand-off, wait for
# what is away, and the daemon still ends.
unlock_device
busy=()
for i in $(seq 8); do (while cat "$S/par$i" >/dev/null 2>&1; do :; done) & busy+=($!); done
(while [ -d "$S" ]; do echo 1 > /proc/sys/vm/drop_caches; sleep 0.05; done) 2>/dev/null & busy+=($!)
sleep 1
check "a SIGTERM while 8 readers keep the helpers busy" kill -TERM "$daemon"
check "ends the daemon with its queues" gone_within "$daemon"
for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
check_fails "and leaves no mount" grep -qs " $MNT fuse" /proc/mounts

# Killed, its queues still hold /dev/fuse open a moment after the process is gone:
# the mount must still fail closed once they let go, and come down at dpfs unmount.
mount_device
daemon=$(daemon_pid)
unlock_device
cat "$S/big" > /dev/null
check "a SIGKILL" kill -KILL "$daemon"
fails_closed() { for _ in $(seq 300); do stat -f "$MNT" 2>&1 | grep -q "Transport endpoint is not connected" && return 0; sleep 0.1; done; return 1; }
check "leaves the mount failing closed" fails_closed
check "which dpfs unmount takes down" "$DPFS" unmount "$MNT"
check_fails "and no mount is left" grep -qs " $MNT fuse" /proc/mounts
finish
