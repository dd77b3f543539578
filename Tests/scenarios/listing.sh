#!/usr/bin/env bash
# Listings of nodes the kernel already holds (KernelView.swift): readdirplus leaves out
# the entry of a node the kernel was told of moments ago and that has not changed since,
# so ls -lR right after an extraction costs the daemon no stat of its backing files.
# Whatever a listing leaves out, ls -l must still show every change: sizes after
# writes, link counts, modes, times, renames, removals.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

require_tools strace
setup_device
unlock_device
S="$MNT/Documents"

# A tree made through the mount: every node was just told to the kernel.
mkdir -p "$WORK/src/d1/d2"
for i in $(seq 1 60); do printf 'file %s\n' "$i" > "$WORK/src/f$i"; printf 'deep %s\n' "$i" > "$WORK/src/d1/d2/g$i"; done
tar cf "$WORK/src.tar" -C "$WORK" src
tar xf "$WORK/src.tar" -C "$S"
daemon=$(daemon_pid)
strace -f -qq -p "$daemon" -e trace=newfstatat,openat,getxattr -o "$WORK/daemon.strace" 2>/dev/null &
tracer=$!
attached=0
for _ in $(seq 300); do grep -qs 'TracerPid:.*[1-9]' "/proc/$daemon/status" && { attached=1; break; }; sleep 0.1; done
listing=$(cd "$S/src" && ls -lR)
getfattr -n user.probe "$S/src" > /dev/null 2>&1   # one getxattr the trace must show
kill -INT "$tracer"; wait "$tracer" 2>/dev/null
expect_eq "strace followed the daemon" "$attached/$(grep -c user.probe "$WORK/daemon.strace")" "1/1"
# Per directory listed: one open of the backing directory; nothing per entry.
stats=$(grep -c 'newfstatat(' "$WORK/daemon.strace")
if [ "$stats" -lt 10 ]; then pass "ls -lR of a tree just extracted: no stat per listed node ($stats for 123 nodes)"
else fail "ls -lR of a tree just extracted: no stat per listed node" "$stats newfstatat calls for 123 nodes"; fi
expect_eq "the listing names every node" "$(printf '%s\n' "$listing" | grep -c -E ' (f|g)[0-9]+$')" "120"
expect_eq "and reads as a plain copy's" "$(printf '%s\n' "$listing" | awk '/^-/ {print $5, $9}' | sort | md5sum)" \
    "$(cd "$WORK/src" && ls -lR | awk '/^-/ {print $5, $9}' | sort | md5sum)"

# Changes after a listing show in the next one.
size_of() { (cd "$(dirname "$1")" && ls -l) | awk -v n="$(basename "$1")" '$9 == n {print $5}'; }
links_of() { (cd "$(dirname "$1")" && ls -l) | awk -v n="$(basename "$1")" '$9 == n {print $2}'; }
ls -lR "$S/src" > /dev/null
printf 'more\n' >> "$S/src/f1"
expect_eq "an append shows in ls -l" "$(size_of "$S/src/f1")" "12"
head -c 70000 /dev/urandom > "$S/src/f2"
expect_eq "a rewrite shows in ls -l" "$(size_of "$S/src/f2")" "70000"
truncate -s 3 "$S/src/f3"
expect_eq "a truncate shows in ls -l" "$(size_of "$S/src/f3")" "3"
ln "$S/src/f4" "$S/src/d1/f4-link"
expect_eq "a new link shows in the first name's count" "$(links_of "$S/src/f4")" "2"
expect_eq "and in the new name's" "$(links_of "$S/src/d1/f4-link")" "2"
rm "$S/src/d1/f4-link"
expect_eq "a removed link shows" "$(links_of "$S/src/f4")" "1"
chmod 600 "$S/src/f5"
expect_eq "a mode change shows" "$( (cd "$S/src" && ls -l) | awk '$9 == "f5" {print $1}')" "-rw-------"
touch -d '2001-02-03 04:05:06' "$S/src/f6"
expect_eq "a time change shows" "$( (cd "$S/src" && ls -l --time-style=+%F) | awk '$7 == "f6" {print $6}')" "2001-02-03"
mv "$S/src/f7" "$S/src/d1/f7-moved"
expect_eq "a rename shows in both directories" \
    "$( (cd "$S/src" && ls) | grep -cx f7)/$( (cd "$S/src/d1" && ls) | grep -cx f7-moved)" "0/1"
mkdir "$S/src/d1/new"; echo x > "$S/src/d1/new/x"
expect_eq "a directory made since shows its link count" "$(links_of "$S/src/d1")" "4"

# The kernel keeps a listing (FOPEN_CACHE_DIR) and serves the next one itself, until an
# entry changes through the mount; then the next listing is read again and shows it.
names_in() { (cd "$1" && ls -a | tr '\n' ' '); }
fuse_ops() { "$ROOT/Scripts/fuse-ops" --mount "$MNT" "$1" | awk '$2 ~ /^FUSE_READDIR/ {n += $1} END {print n + 0}'; }
before=$(names_in "$S/src/d1")
if fuse_ops_available; then
    expect_eq "a listing repeated is the kernel's: no READDIR request" "$(fuse_ops "ls -la '$S/src/d1' > /dev/null")" "0"
    touch "$S/src/d1/added"
    expect_eq "after a create in it, the next listing asks the daemon" \
        "$(fuse_ops "ls -la '$S/src/d1' > /dev/null" | sed 's/^[1-9][0-9]*$/some/')" "some"
    expect_eq "and the one after that does not" "$(fuse_ops "ls -la '$S/src/d1' > /dev/null")" "0"
else
    log "no fuse tracepoints in this kernel (Linux 6.16+): request counts skipped"
    touch "$S/src/d1/added"
fi
expect_eq "the file made shows" "$(names_in "$S/src/d1")" "$(printf '%s' "$before" | sed 's/^\. \.\. /. .. added /')"
mv "$S/src/d1/added" "$S/src/d1/d2/moved"
expect_eq "a rename out shows in the source's listing" "$( (cd "$S/src/d1" && ls) | grep -c '^added$')" "0"
expect_eq "and in the target's" "$( (cd "$S/src/d1/d2" && ls) | grep -c '^moved$')" "1"
rm "$S/src/d1/d2/moved"
expect_eq "a removal shows" "$( (cd "$S/src/d1/d2" && ls) | grep -c '^moved$')" "0"
"$DPFS" lock "$MNT" > /dev/null
expect_eq "a lock leaves listings as they were" "$(names_in "$S/src/d1")" "$before"
unlock_device

# tar makes each directory 0700 and sets its mode at the end; the kernel then drops the
# directory's entry. The parent's next listing gives it again, so ls -lR goes into
# each directory without a LOOKUP.
mkdir -p "$WORK/modes/m1/m2"
tar cf "$WORK/modes.tar" -C "$WORK" modes
tar xf "$WORK/modes.tar" -C "$S"
lookups() { "$ROOT/Scripts/fuse-ops" --mount "$MNT" "$1" | awk '$2 == "FUSE_LOOKUP" {n += $1} END {print n + 0}'; }
if fuse_ops_available; then
    expect_eq "directories tar extracted are entered without a LOOKUP after a listing" \
        "$(lookups "ls '$S' > /dev/null; ls -lR '$S/modes' > /dev/null")" "0"
fi
expect_eq "the whole tree still reads back" "$(cat "$S/src/f1")" "$(printf 'file 1\nmore')"

# A lookup opens nothing where a file handle names the node (ext4, as here): the stats
# of files the kernel has forgotten (dentries and inodes dropped) cost the daemon a
# stat each, no O_PATH descriptor, and no handle (each gets back the one it had,
# DormantHandles.swift; only the directories on the way ask for theirs); the files then
# open through the handle.
sync; echo 2 > /proc/sys/vm/drop_caches
strace -f -qq -p "$daemon" -e trace=openat,name_to_handle_at,statx,newfstatat -o "$WORK/lookup.strace" 2>/dev/null &
tracer=$!
# Every thread traced (strace -f attaches them one by one), not only the first.
attached=0
for _ in $(seq 600); do
    untraced=0
    for task in /proc/"$daemon"/task/*; do grep -qs 'TracerPid:[[:space:]]*[1-9]' "$task/status" || untraced=1; done
    [ "$untraced" = 0 ] && { attached=1; break; }
    sleep 0.05
done
for i in $(seq 11 60); do stat "$S/src/d1/d2/g$i" > /dev/null; done
sleep 0.3; kill -INT "$tracer"; wait "$tracer" 2>/dev/null
handles=$(grep -c 'name_to_handle_at(' "$WORK/lookup.strace")
stats=$(grep -cE '(statx|newfstatat)\(' "$WORK/lookup.strace")
path_opens=$(grep -c 'O_PATH' "$WORK/lookup.strace")
if [ "$(stat -c %W "$PASS")" -gt 0 ]; then
    expect_eq "stat of 50 forgotten files: a stat each, no handle asked past the directories on the way, no O_PATH open (traced/stats ≥ 50/handles ≤ 5/opens)" \
        "$attached/$((stats >= 50))/$((handles <= 5))/$path_opens" "1/1/1/0"
else  # no birth times on this disk: no handle is kept for the next lookup
    expect_eq "stat of 50 forgotten files: a stat and a handle each, no O_PATH open (traced/stats ≥ 50/handles ≥ 50/opens)" \
        "$attached/$((stats >= 50))/$((handles >= 50))/$path_opens" "1/1/1/0"
fi
log "stats $stats, handles asked for: $handles"
expect_eq "and the files read back" "$(cat "$S/src/d1/d2/g11" "$S/src/d1/d2/g60")" "$(printf 'deep 11\ndeep 60')"

# A file made and then given its owner, mode and times through its open descriptor, as
# tar does before it closes it, reopens nothing by handle: the open file's descriptor
# serves the SETATTRs and the attributes that answer them.
mkdir "$S/made"; touch "$S/made/first"  # the directory's own descriptor opens here
strace -f -qq -p "$daemon" -e trace=open_by_handle_at -o "$WORK/setattr.strace" 2>/dev/null &
tracer=$!
attached=0
for _ in $(seq 300); do grep -qs 'TracerPid:.*[1-9]' "/proc/$daemon/status" && { attached=1; break; }; sleep 0.1; done
python3 - "$S/made" <<'PY'
import os, sys
for i in range(20):
    fd = os.open(f"{sys.argv[1]}/m{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.write(fd, b"made %d" % i)
    os.fchown(fd, 1234, 567)
    os.fchmod(fd, 0o640)
    os.utime(fd, (1600000000, 1600000000))
    os.close(fd)
PY
kill -INT "$tracer"; wait "$tracer" 2>/dev/null
expect_eq "20 files made and set up through their descriptors: none reopened by handle (traced/opens)" \
    "$attached/$(grep -c 'open_by_handle_at(' "$WORK/setattr.strace")" "1/0"
expect_eq "and each has its owner, mode and time" \
    "$(stat -c '%u %g %a %Y' "$S/made"/m* | sort -u)" "1234 567 640 1600000000"
expect_eq "and its contents" "$(cat "$S/made/m19")" "made 19"
# A long name (stored under a stand-in, its sealed form in a side file) whose side
# file cannot be opened for want of descriptors is not left out of a listing the kernel
# would keep: the listing fails, and the next one shows it.
long=$(printf 'L%.0s' $(seq 240))
mkdir "$S/longs"
touch "$S/longs/$long"
ls "$S/longs" > /dev/null      # the directory's own record read while descriptors are there
echo 1 > /proc/sys/vm/drop_caches   # and the kernel's copy of the listing dropped
fds=$(ls "/proc/$daemon/fd" | sort -n)
# The third free descriptor number: the listing may open the directory's node and the
# directory itself, and then nothing more.
limit=$(awk 'BEGIN {n = 0; found = 0} {while (n < $1) {if (++found == 3) {print n; exit} n++} n = $1 + 1}
             END {if (found < 3) print n + 2 - found}' <<<"$fds" | head -1)
soft_before=$(prlimit --pid "$daemon" --nofile --noheadings --output SOFT | tr -d ' ')
# Two descriptors free below the limit, none left for the side file.
prlimit --pid "$daemon" --nofile="$limit:"
short=$(ls "$S/longs" 2>&1; echo "exit $?")
prlimit --pid "$daemon" --nofile="$soft_before:"
expect_eq "a listing that cannot read a long name fails instead of leaving it out" \
    "$(printf '%s\n' "$short" | grep -c -e 'Too many open files' -e '^exit 2$')" "2"
expect_eq "and the next listing shows it" "$( (cd "$S/longs" && ls) | grep -cx "$long")" "1"
# A name in a directory the daemon has forgotten needs the directory's record (its ID
# seals the name): with no descriptor free to read it, the lookup says why (EMFILE),
# not that the directory is damaged (EIO, as before), and works once descriptors are back.
mkdir "$S/cold"
echo kept > "$S/cold/x"
sync
echo 2 > /proc/sys/vm/drop_caches   # the kernel forgets the directory, and so the daemon
sleep 0.5                           # which closes the descriptors of what it forgot
free_fd=$(ls "/proc/$daemon/fd" | sort -n | awk 'BEGIN {n = 0} $1 != n {exit} {n++} END {print n}')
prlimit --pid "$daemon" --nofile="$free_fd:"
short=$(stat -c %s "$S/cold/x" 2>&1)
prlimit --pid "$daemon" --nofile="$soft_before:"
expect_eq "a lookup with no descriptor free fails with EMFILE" \
    "$(printf '%s\n' "$short" | grep -c -e 'Too many open files')/$(printf '%s\n' "$short" | grep -c 'Input/output error')" "1/0"
expect_eq "and works once descriptors are back" "$(cat "$S/cold/x")" "kept"
# A rename whose node cannot be opened to tag it with its new name (no descriptor
# free) is refused with EMFILE: renamed untagged, the file would then fail every open
# with EIO, as a node moved in the backing tree does.
mkdir "$S/move"
echo moved > "$S/move/a"
ls -l "$S/move" > /dev/null         # entries for the directory and the file, used just now
free_fd=$(ls "/proc/$daemon/fd" | sort -n | awk 'BEGIN {n = 0} $1 != n {exit} {n++} END {print n}')
prlimit --pid "$daemon" --nofile="$free_fd:"
short=$(mv "$S/move/a" "$S/move/b" 2>&1; echo "exit $?")
prlimit --pid "$daemon" --nofile="$soft_before:"
expect_eq "a rename with no descriptor free fails with EMFILE and moves nothing" \
    "$(printf '%s
' "$short" | grep -c -e 'Too many open files' -e '^exit 1$')/$(ls "$S/move")" "2/a"
mv "$S/move/a" "$S/move/b"
expect_eq "and the same rename works once descriptors are back" "$(cat "$S/move/b" 2>&1)" "moved"
"$DPFS" unmount "$MNT"
finish
