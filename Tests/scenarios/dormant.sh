#!/usr/bin/env bash
# Issue 16, stats: a file the kernel forgot (dropped caches) is looked up again with the
# file handle its entry had (DormantHandles.swift): one statx, no name_to_handle_at.
# The handle only ever goes back to the same life of the inode: on a journaled ext4,
# where a freed inode number is given out again at once, files removed and made again
# under the same names read back whole round after round, and a file put in the backing
# tree behind the daemon's back on a number a forgotten file had is not taken for it.
source "$(dirname "$0")/lib.sh"

IMG="$WORK/disk.img"; DISK="$WORK/disk"
# 256-byte inodes: the ones with room for a birth time (a small filesystem may get 128).
truncate -s 64M "$IMG" && mkfs.ext4 -q -F -j -I 256 "$IMG" && mkdir -p "$DISK" && mount -o loop "$IMG" "$DISK" \
    || { fail "a journaled 64 MiB loop filesystem for the test"; finish; }
scenario_cleanup() {
    [ -n "${STRACE_PID:-}" ] && kill "$STRACE_PID" 2>/dev/null
    if grep -qs " $MNT fuse" /proc/mounts; then "$DPFS" unmount "$MNT" 2>/dev/null || fusermount3 -uz "$MNT"; fi
    umount "$DISK" 2>/dev/null
    return 0
}
DEV="$DISK/device"
setup_device
unlock_device
D="$MNT/Documents/d"
mkdir "$D"
PID=$(daemon_pid)
forget_all() { sync; echo 2 > /proc/sys/vm/drop_caches; sleep 0.5; }
# trace FILE CALLS: strace on every thread of the daemon, returned once all are traced.
trace() { trace_daemon "$1" "$2" || fail "strace did not attach to every thread of the daemon"; }
untrace() { sleep 0.3; kill "$STRACE_PID"; wait "$STRACE_PID" 2>/dev/null; STRACE_PID=""; }
echo probe > "$DISK/probe"
check "the loop filesystem keeps birth times (what the handles are told apart by)" test "$(stat -c %W "$DISK/probe")" -gt 0

# 1. Forgotten files are found again without asking the kernel for their handles.
for i in $(seq 1 200); do echo "file $i" > "$D/f$i"; done
forget_all
trace "$WORK/trace" name_to_handle_at,statx,newfstatat
stat "$D"/f* > /dev/null
read_back=$(for i in $(seq 1 200); do [ "$(cat "$D/f$i")" = "file $i" ] || echo "f$i"; done)
untrace
statx_calls=$(grep -cE "(statx|newfstatat)\(" "$WORK/trace")
handle_calls=$(grep -c 'name_to_handle_at(' "$WORK/trace")
log "200 forgotten files looked up again: $statx_calls statx, $handle_calls name_to_handle_at"
check "their lookups read each file's attributes ($statx_calls statx)" test "$statx_calls" -ge 200
# Only the two directories on the way (Documents, d) ask for theirs: directories keep no
# handle once forgotten (an rmdir would have to stat each one first to drop it).
check "no lookup of a forgotten file asks for its handle again ($handle_calls calls)" test "$handle_calls" -le 2
expect_eq "every file opens and reads through the handle it had" "$read_back" ""

# 2. Inode numbers freed and given out again at once, the caches dropped in between:
# every file always reads its own contents, and through its own handle (a wrong one
# would not show to cat: the kernel looks the name up again on ESTALE; the daemon's
# calls show it).
declare -A seen
reused=0; wrong=""
trace "$WORK/trace2" open_by_handle_at
for round in $(seq 1 15); do
    for i in $(seq 1 40); do
        rm -f "$D/r$i"
        echo "round $round file $i" > "$D/r$i"
    done
    forget_all
    for i in $(seq 1 40); do
        got=$(cat "$D/r$i" 2>&1)
        [ "$got" = "round $round file $i" ] || wrong+="r$i in round $round: $got; "
        number=$(stat -c %i "$D/r$i")
        [ -n "${seen[$number]:-}" ] && reused=$((reused + 1))
        seen[$number]=1
    done
done
untrace
log "inode numbers given out again over 15 rounds of 40 files: $reused"
check "the files were reopened by handle ($(grep -c 'open_by_handle_at(' "$WORK/trace2") calls)" \
    test "$(grep -c 'open_by_handle_at(' "$WORK/trace2")" -ge 600
grep ESTALE "$WORK/trace2" | head -3 | while read -r line; do log "ESTALE: $line"; done
expect_eq "never with a handle of another life of the number (no ESTALE)" "$(grep -c ESTALE "$WORK/trace2")" "0"
check "the loop filesystem gave freed numbers out again (what this part tests)" test "$reused" -gt 100
expect_eq "after 15 rounds of remove, make and forget, every file reads its own contents" "$wrong" ""

# 3. Behind the daemon's back: a forgotten file's backing node removed, and a copy of
# another file's put under its name on the same inode number. The lookup must not hand
# the copy the old handle (ESTALE at every use); it takes the copy's own, whose name
# tags do not name this place: EIO, as for any node moved in the backing tree.
echo "victim" > "$D/victim"; echo "other" > "$D/other"
victim_backing=$(backing "$D/victim"); other_backing=$(backing "$D/other")
number=$(stat -c %i "$D/victim")
forget_all
rm "$victim_backing"
same_number=0
dir=$(dirname "$victim_backing")
for attempt in $(seq 1 40); do
    cp -a "$other_backing" "$dir/.copy.$attempt"
    if [ "$(stat -c %i "$dir/.copy.$attempt")" = "$number" ]; then
        mv "$dir/.copy.$attempt" "$victim_backing"; same_number=1; break
    fi
done
rm -f "$dir"/.copy.*
forget_all
check "a copy took the forgotten file's inode number (what this part tests)" test "$same_number" = 1
# A stale handle would not show to the caller: the open meets ESTALE, the kernel looks
# the name up again (LOOKUP_REVAL), and that lookup, finding the entry, asks for the
# handle and replaces it. The daemon's own calls show it: no ESTALE among them.
trace "$WORK/trace3" open_by_handle_at
opened=$(cat "$D/victim" 2>&1)
changed=$(chmod 600 "$D/victim" 2>&1)
untrace
case $opened in
    *"Input/output error"*) pass "the copy on the old number is refused as a foreign node (EIO)" ;;
    *) fail "the copy on the old number is refused as a foreign node (EIO)" "got: $opened" ;;
esac
expect_eq "a chmod reaches it" "$changed" ""
check "the daemon opened nodes by handle on the way ($(grep -c 'open_by_handle_at(' "$WORK/trace3") calls)" \
    grep -q 'open_by_handle_at(' "$WORK/trace3"
expect_eq "none of them with the old file's handle (no ESTALE)" "$(grep -c ESTALE "$WORK/trace3")" "0"
expect_eq "the other file still reads" "$(cat "$D/other")" "other"

"$DPFS" unmount "$MNT" || fail "unmount"
finish
