#!/usr/bin/env bash
# Requests that wait, on FUSE over io_uring. There one thread per CPU serves every
# request made on its CPU, so a request it serves must never wait on another of that
# CPU's requests being served. Two such waits, each answered here with the CPU's other
# requests: SEEK_DATA and SEEK_HOLE on a file with dirty pages in a shared mapping (the
# daemon has the kernel write them back first, which it does with WRITEs from that
# CPU), and a directory's class change while a passcode check holds the lock state (a
# lock holds it too, while the kernel drops pages that reads in flight hold: a class
# change waiting there could wedge the lock). A debug-build hook holds the passcode
# check (DPFS_TEST_HOLD_UNLOCK).
#
# Should either regress, the request waits for good and its queue thread with it,
# and with it every later request of that CPU: each check waits for an answer with a
# deadline instead of waiting on the process, a check unanswered ends the scenario at
# once, and the cleanup then aborts the connection (umount -f) without touching the
# mount, so that what can end ends.
source "$(dirname "$0")/lib.sh"
require_debug_build
DPFS=$DEBUG
require_tools python3 taskset setfattr getfattr

PARAM=/sys/module/fuse/parameters/enable_uring
if [ ! -w "$PARAM" ]; then
    log "this kernel has no FUSE over io_uring (Linux 6.14+ with CONFIG_FUSE_IO_URING): skipped"
    finish
fi
ORIGINAL=$(cat "$PARAM")
HOLD="$WORK/let-check-go"
unlocker=""
WEDGED=""
started=()   # what touches the mount in the background, by pid
scenario_cleanup() {
    touch "$HOLD"
    local pid
    if [ -n "$WEDGED" ]; then
        umount -f "$MNT" 2>/dev/null
        # Still ours (a pid long ended may name another process by now).
        for pid in "${started[@]}"; do
            [ "$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$$" ] && kill -KILL "$pid" 2>/dev/null
        done
    fi
    [ -n "$unlocker" ] && { kill "$unlocker" 2>/dev/null; wait "$unlocker" 2>/dev/null; }
    echo "$ORIGINAL" > "$PARAM"
}
# answered "what" FILE [SECONDS]: FILE appears within SECONDS (60), or the scenario ends.
answered() {
    if within "${3:-60}" test -e "$2"; then pass "$1"; return; fi
    fail "$1" "no answer within ${3:-60} s"
    WEDGED=1
    finish
}
echo Y > "$PARAM"
export DPFS_TEST_HOLD_UNLOCK=$HOLD
setup_device
unset DPFS_TEST_HOLD_UNLOCK
touch "$HOLD"
unlock_device > /dev/null || fail "unlock"
rm -f "$HOLD" "$HOLD.held"
expect_eq "the mount serves through io_uring" "$("$DPFS" status "$MNT" | sed -n 's/^transport: //p')" "io_uring"
S="$MNT/Documents"
cpus=$(nproc)

# --- SEEK_DATA with a dirty shared mapping, from each CPU ---------------------------
for cpu in $(seq 0 $((cpus - 1))); do
    printf 'head' > "$S/sparse$cpu"
    truncate -s 1048576 "$S/sparse$cpu"
    # Started and left: a lseek that waits for good cannot be waited for.
    taskset -c "$cpu" python3 - "$S/sparse$cpu" "$WORK/seek$cpu" <<'PY' > /dev/null 2>&1 &
import mmap, os, sys
path, out = sys.argv[1:]
fd = os.open(path, os.O_RDWR)
mapping = mmap.mmap(fd, 0)
mapping[600000:600008] = b"dirtypag"   # in the hole: a dirty page, not yet written back
data = os.lseek(fd, 8192, os.SEEK_DATA)
hole = os.lseek(fd, data, os.SEEK_HOLE)
with open(out + ".tmp", "w") as f:
    f.write("%s %s\n" % (8192 < data <= 600000, hole > 600008))
os.rename(out + ".tmp", out)
PY
    started+=($!)
    answered "SEEK_DATA and SEEK_HOLE past a dirty mapped page on CPU $cpu are answered" "$WORK/seek$cpu"
    expect_eq "and find the hole before it and that page's data (written back first)" \
        "$(cat "$WORK/seek$cpu" 2>/dev/null)" "True True"
done

# Twelve at once from one CPU: more than its queue lets wait on the kernel at once (the
# rest are answered as for a file without holes, which lseek(2) allows), and more than
# the helpers that serve them: each is answered, and none takes the dirty bytes for a
# hole (an answer with holes or one without: the bytes are data either way).
for i in $(seq 12); do
    printf 'head' > "$S/burst$i"
    truncate -s 1048576 "$S/burst$i"
done
for i in $(seq 12); do
    taskset -c 0 python3 - "$S/burst$i" "$WORK/burst$i" "$WORK/burst-go" <<'PY' > /dev/null 2>&1 &
import mmap, os, sys, time
path, out, go = sys.argv[1:]
fd = os.open(path, os.O_RDWR)
mapping = mmap.mmap(fd, 0)
mapping[600000:600008] = b"dirtypag"
open(out + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
data = os.lseek(fd, 600000, os.SEEK_DATA)
hole = os.lseek(fd, 600000, os.SEEK_HOLE)
with open(out + ".tmp", "w") as f:
    f.write("%s %s\n" % (data == 600000, hole >= 600008))
os.rename(out + ".tmp", out)
PY
    started+=($!)
done
all_there() { local i; for i in $(seq 12); do [ -e "$WORK/$1$i$2" ] || return 1; done; }
check "twelve mappings dirtied on CPU 0" within 60 all_there burst .ready
touch "$WORK/burst-go"
within 60 all_there burst "" && touch "$WORK/burst-answered"
answered "twelve seeks at once on CPU 0 are answered" "$WORK/burst-answered" 0
expect_eq "none takes the dirty bytes for a hole" "$(cat "$WORK"/burst[0-9]* | sort | uniq -c | sed 's/^ *//')" "12 True True"

# --- a directory's class change during a passcode check -----------------------------
mkdir "$S/folder"
echo kept > "$S/folder/note"
echo plain > "$S/plain"
# An unlock of the unlocked device checks the passcode too; the hook holds it there.
"$DPFS" unlock "$MNT" --passcode-file "$PASS" > "$WORK/unlock.out" 2>&1 &
unlocker=$!
check "the passcode check is held" within 60 test -e "$HOLD.held"
( taskset -c 0 setfattr -n user.dpfs.protection -v complete "$S/folder" && touch "$WORK/classed" ) 2>/dev/null &
started+=($!)
# The hook lets go after a minute by itself: answered within 30 s is answered during it.
answered "a directory's class change is answered while the check holds the lock state" "$WORK/classed" 30
# Had the change waited, its CPU's queue would wait with it.
for cpu in $(seq 0 $((cpus - 1))); do
    ( taskset -c "$cpu" cat "$S/plain" > "$WORK/read$cpu" && touch "$WORK/read$cpu.done" ) 2>/dev/null &
    started+=($!)
done
for cpu in $(seq 0 $((cpus - 1))); do
    answered "a read on CPU $cpu is answered meanwhile" "$WORK/read$cpu.done" 20
done
expect_eq "the unlock is still held" "$(test -e "$HOLD.held" && kill -0 "$unlocker" 2>/dev/null && echo held)" "held"
touch "$HOLD"
wait "$unlocker"; status=$?; unlocker=""
expect_eq "the held unlock succeeds once let go" "$status" "0"
expect_eq "the new class reads back" "$(getfattr --only-values -n user.dpfs.protection "$S/folder" 2>/dev/null)" "complete"

# The class change recorded during the check is kept: mounted again,
# the directory's record agrees with the keybag and its files read.
check "unmount" "$DPFS" unmount "$MNT"
mount_device
unlock_device > /dev/null || fail "unlock after the remount"
expect_eq "after a remount the class is still complete" \
    "$(getfattr --only-values -n user.dpfs.protection "$S/folder" 2>/dev/null)" "complete"
expect_eq "and the directory's file reads" "$(cat "$S/folder/note" 2>&1)" "kept"
check "a new file in it is made (its record is not taken for one put back)" sh -c "echo new > '$S/folder/new'"
finish
