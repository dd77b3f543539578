#!/usr/bin/env bash
# An app's fsync of a directory syncs the files created in it first: the daemon writes a
# new file's header into an unnamed file (O_TMPFILE) and links it in, and ext4 makes a
# name durable at the next journal commit (any fsync on the filesystem) but the data
# only at writeback, so a power cut after the app synced the directory could leave the
# name without its header, which reads as damage (NewFileSyncs.swift). strace on the
# daemon shows an fdatasync for each file of a run of creates (most made from spares,
# SpareFiles.swift) after its link and before the directory's fsync, and one for a file
# the app made unnamed itself (O_TMPFILE) and linked in.
source "$(dirname "$0")/lib.sh"

if ! command -v strace >/dev/null; then
    log "strace is missing: skipped"
    finish
fi
setup_device
unlock_device
D="$MNT/Documents"
pid=$(daemon_pid)
TRACE="$WORK/trace"
tracer=""

scenario_cleanup() {
    if [ -n "$tracer" ] && kill -0 "$tracer" 2>/dev/null; then kill "$tracer" 2>/dev/null; wait "$tracer" 2>/dev/null; fi
}

# Every thread of the daemon traced (strace -f attaches to them one by one): up to 60 s.
all_traced() {
    local status
    for status in /proc/"$pid"/task/*/status; do
        [ "$(awk '/^TracerPid:/ {print $2}' "$status" 2>/dev/null)" = "$tracer" ] || return 1
    done
}
twenty_creates() {   # a run: made from spares
    for i in $(seq 1 20); do echo "file $i" > "$1/f$i"; done
}
tmpfile_linked() {
    python3 -c '
import ctypes, os, sys
fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_WRONLY, 0o600)
os.write(fd, b"made unnamed")
AT_FDCWD, AT_SYMLINK_FOLLOW = -100, 0x400
libc = ctypes.CDLL(None, use_errno=True)
if libc.linkat(AT_FDCWD, f"/proc/self/fd/{fd}".encode(), AT_FDCWD,
               os.path.join(sys.argv[1], "linked").encode(), AT_SYMLINK_FOLLOW) != 0:
    sys.exit(f"linkat: {os.strerror(ctypes.get_errno())}")
os.close(fd)' "$1"
}
# One traced run of `$2 DIR` in a new directory $1 and an fsync of it; prints the
# fdatasyncs seen between the last link and the directory's fsync, -1 when the trace
# does not show that order at all (strace missed a call: then the run is tried again).
traced_run() {
    local dir=$1 work=$2 tries=0
    : > "$TRACE"
    strace -f -qq -p "$pid" -o "$TRACE" -e trace=fdatasync,fsync,linkat 2>/dev/null &
    tracer=$!
    until all_traced || [ $tries -ge 600 ]; do sleep 0.1; tries=$((tries + 1)); done
    if ! all_traced; then kill "$tracer"; wait "$tracer" 2>/dev/null; tracer=""; echo -1; return; fi
    mkdir "$D/other-$dir" "$D/$dir"
    if ! "$work" "$D/$dir"; then
        kill "$tracer"; wait "$tracer" 2>/dev/null; tracer=""
        echo "the workload $work failed"
        return
    fi
    : > "$D/other-$dir/a"                              # another directory's, not synced
    python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY); os.fsync(fd); os.close(fd)' "$D/$dir"
    kill "$tracer"; wait "$tracer" 2>/dev/null; tracer=""
    # Each call as it completes (strace -f splits a call another thread interrupted into
    # "<unfinished ...>" and "<... resumed>"): the fdatasyncs between the last link and
    # the last fsync (the directory's).
    python3 - "$TRACE" <<'PY'
import re, sys
pending, calls = {}, []
for line in open(sys.argv[1]):
    # strace pads the pid to five columns: "9901  call", "12345 call".
    pid, call = (line.rstrip("\n").split(None, 1) + [""])[:2]
    if call.endswith("<unfinished ...>"):
        pending[pid] = call[: -len("<unfinished ...>")].rstrip()
        continue
    resumed = re.match(r"<\.\.\. \w+ resumed>(.*)", call)
    if resumed:
        call = pending.pop(pid, "") + resumed.group(1)
    m = re.match(r"(\w+)\(.*\)\s+=\s+(-?\d+)", call)
    if m and int(m.group(2)) >= 0:
        calls.append(m.group(1))
last_link = max((i for i, c in enumerate(calls) if c == "linkat"), default=-1)
last_fsync = max((i for i, c in enumerate(calls) if c == "fsync"), default=-1)
print(sum(1 for c in calls[last_link + 1 : last_fsync] if c == "fdatasync") if last_link < last_fsync else -1)
PY
}
# Sets `synced` and `ran` (the directory used) from up to three traced runs of $2.
traced_until_seen() {
    local attempt
    for attempt in 1 2 3; do
        ran="$1$attempt"
        synced=$(traced_run "$ran" "$2")
        [ "$synced" != "-1" ] && return
        log "attempt $attempt: the trace did not show the link and the fsync in order; again"
    done
}
traced_until_seen run twenty_creates
expect_eq "the directory's fsync first synced the data of the 20 files created in it" "$synced" "20"
bad=0
for i in $(seq 1 20); do [ "$(cat "$D/$ran/f$i" 2>&1)" = "file $i" ] || bad=$((bad + 1)); done
expect_eq "and the files read back" "$bad" "0"

traced_until_seen tmpfile tmpfile_linked
expect_eq "the directory's fsync first synced the unnamed file the app linked in" "$synced" "1"
expect_eq "and it reads back" "$(cat "$D/$ran/linked" 2>&1)" "made unnamed"
finish
