#!/usr/bin/env bash
# Spare files (SandboxFS/SpareFiles.swift): during a run of creates in one directory
# the daemon makes the next file ahead, header included. What a user sees must not
# change: every file is whole after a remount; a file made from a spare has the times,
# group, ACL and class a file made at that moment gets (after a chgrp and chmod g+s, a
# default ACL or a class change on the directory between the spare and the create); a
# run holds two spares (SpareFiles.depth), none outlives its directory, and a lock or
# restart drops them (no complete file is made while locked); and a full disk gives the
# spares' inodes back to the create or mkdir that needs them rather than failing.
source "$(dirname "$0")/lib.sh"

require_tools setfacl getfacl getfattr setfattr
MOUNT_ARGS="-o allow_other" setup_device
unlock_device
D="$MNT/Documents"
pid=$(daemon_pid)
AHEAD=2   # SpareFiles.depth

# The daemon's descriptors of unnamed files (an O_TMPFILE shows as "/#<ino> (deleted)",
# and so does a file made from one while it is open: a new file's release reaches the
# daemon after close returns, and the last create's spares are made after its reply,
# so a count other than the one expected, $1, is read again for up to 30 s before it
# stands: a deadline for a loaded machine, not a wait).
unnamed_files() {
    local count tries=0
    count=$(ls -l "/proc/$pid/fd" 2>/dev/null | grep -c '/#[0-9]* (deleted)$')
    while [ "$count" -ne "$1" ] && [ $tries -lt 300 ]; do
        sleep 0.1; tries=$((tries + 1))
        count=$(ls -l "/proc/$pid/fd" 2>/dev/null | grep -c '/#[0-9]* (deleted)$')
    done
    echo "$count"
}

# A run of creates: each file named, whole and readable after a remount.
mkdir "$D/run"
for i in $(seq 1 200); do echo "file $i" > "$D/run/f$i"; done
expect_eq "a run of creates leaves its spares, made ahead" "$(unnamed_files $AHEAD)" "$AHEAD"
mkdir "$D/other"
for i in 1 2 3; do echo "other $i" > "$D/other/g$i"; done
expect_eq "a run elsewhere closes the first run's spares (as many again)" "$(unnamed_files $AHEAD)" "$AHEAD"
rm -r "$D/other"
expect_eq "removing the run's directory closes its spares" "$(unnamed_files 0)" "0"
"$DPFS" unmount "$MNT" && mount_device && unlock_device
pid=$(daemon_pid)
bad=0
for i in $(seq 1 200); do [ "$(cat "$D/run/f$i" 2>&1)" = "file $i" ] || bad=$((bad + 1)); done
expect_eq "after a remount, all 200 files read back whole" "$bad" "0"
expect_eq "the directory lists exactly them" "$(ls "$D/run" | wc -l)" "200"

# Times: a spare made long before its create still gives the file its create time.
# (Made with open and close: touch would set the times itself. File times come from
# the kernel's coarse clock, up to a tick behind the caller's: 20 ms allowed.)
mkdir "$D/slow"
: > "$D/slow/a"; : > "$D/slow/b"
sleep 1.5
times=$(python3 -c '
import os, sys, time
before = time.time_ns()
os.close(os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
st = os.stat(sys.argv[1])
print(min(st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns) >= before - 20_000_000)' "$D/slow/c")
expect_eq "a file made from a spare 1.5 s old has its access, change and modification times from its create" "$times" "True"

# Group: chgrp and chmod g+s on the directory between the spare and the create.
mkdir "$D/group"
touch "$D/group/a" "$D/group/b"
chgrp 4321 "$D/group" && chmod g+s "$D/group"
touch "$D/group/c"
expect_eq "a file made after chmod g+s gets the directory's group" "$(stat -c %g "$D/group/c")" "4321"

# ACL: a default ACL set on the directory between the spare and the create. With umask
# 0 the create asks for the same mode with or without the ACL (the umask would
# otherwise tell the two apart).
mkdir "$D/acl"
(umask 0; touch "$D/acl/a" "$D/acl/b")
check "setfacl -d -m u:1001:rwx on the directory" setfacl -d -m u:1001:rwx "$D/acl"
(umask 0; touch "$D/acl/c")
if getfacl --omit-header "$D/acl/c" 2>/dev/null | grep -q '^user:1001:rwx'; then
    pass "a file made after a default ACL is set inherits it"
else
    fail "a file made after a default ACL is set inherits it" "$(getfacl --omit-header "$D/acl/c" 2>&1 | tr '\n' ' ')"
fi

# Class: a spare carries a header in the class its directory passed on when it was
# made. The directory's class changed in between: the file gets the new one.
class_of() { getfattr --absolute-names --only-values -n user.dpfs.protection "$1" 2>&1; }
mkdir "$D/class"
: > "$D/class/a"; : > "$D/class/b"
check "the directory's class set to complete" setfattr -n user.dpfs.protection -v complete "$D/class"
echo "made after the change" > "$D/class/c"
expect_eq "a file made after its directory's class changed has the new class" "$(class_of "$D/class/c")" "complete"
expect_eq "and reads back" "$(cat "$D/class/c")" "made after the change"

# Lock: a complete-class spare's key goes with the lock, and no file of that class is
# made while locked (iOS refuses it: EPERM), spare or not.
mkdir "$D/locked"
setfattr -n user.dpfs.protection -v complete "$D/locked"
: > "$D/locked/a"; : > "$D/locked/b"
expect_eq "a complete directory's run holds its spares" "$(unnamed_files $AHEAD)" "$AHEAD"
check "lock --now" "$DPFS" lock "$MNT" --now
expect_eq "the lock drops them" "$(unnamed_files 0)" "0"
check_error "no complete file is made while locked" "Operation not permitted" sh -c ": > '$D/locked/c'"
check "unlock" unlock_device
: > "$D/locked/d"; : > "$D/locked/e"
echo "after the unlock" > "$D/locked/f"
expect_eq "creates after the unlock make spares again, and their files read back" \
    "$(unnamed_files $AHEAD) $(cat "$D/locked/f") $(class_of "$D/locked/f")" "$AHEAD after the unlock complete"
check "restart" "$DPFS" restart "$MNT"
expect_eq "a restart drops the spares too" "$(unnamed_files 0)" "0"
check "unlock after the restart" unlock_device

# A full disk: the spares' inodes go to creates in another directory.
IMG="$WORK/small.img"
SMALL="$WORK/small"
scenario_cleanup() {
    if grep -qs " $SMALL/mnt fuse" /proc/mounts; then "$DPFS" unmount "$SMALL/mnt" 2>/dev/null || umount -l "$SMALL/mnt"; fi
    grep -qs " $SMALL " /proc/mounts && umount "$SMALL"
}
truncate -s 16M "$IMG" && mkfs.ext4 -q -F -N 256 "$IMG" && mkdir -p "$SMALL" && mount -o loop "$IMG" "$SMALL" \
    || { fail "a loop filesystem with few inodes for the test"; finish; }
"$DPFS" init "$SMALL/device" --passcode-file "$PASS" --secret-store "file:$WORK/small-secrets" --create >/dev/null \
    && mkdir "$SMALL/mnt" && "$DPFS" mount "$SMALL/device" "$SMALL/mnt" >/dev/null \
    && "$DPFS" unlock "$SMALL/mnt" --passcode-file "$PASS" >/dev/null || { fail "a device on it"; finish; }
S="$SMALL/mnt/Documents"
pid=$(daemon_pid "$SMALL/mnt")
mkdir "$S/fill" "$S/elsewhere"
n=0
while touch "$S/fill/f$n" 2>/dev/null; do n=$((n + 1)); [ $n -lt 2000 ] || break; done
expect_eq "creates fill every inode, then fail (ENOSPC)" "$( [ $n -gt 10 ] && [ $n -lt 2000 ] && echo yes)" "yes"
check_error "and the next create says so" "No space left on device" touch "$S/fill/one-more"
# Some inodes back, then creates in the same directory until the last free one is the
# spare's. (A removed file's inode may stay in use a while: the daemon keeps recent
# nodes' descriptors.)
free_inodes() { df --output=iavail "$SMALL" | tail -1 | tr -d ' '; }
# Removes fill's files named, then waits (60 s at most) until their inodes are free: the
# daemon's reapers free a removed file's inode after the rm returns, later on a busy
# machine, and creates made before then would find the disk still full.
remove_and_await_inodes() {
    local before tries=0
    before=$(free_inodes)
    rm "$@"
    until [ "$(free_inodes)" -ge $((before + $#)) ] || [ $tries -ge 600 ]; do sleep 0.1; tries=$((tries + 1)); done
}
# Creates in fill (named $1<n>) until the last free inodes are the spares'.
spares_take_last_inodes() {
    local i=0
    until [ "$(free_inodes)" = 0 ] && [ "$(unnamed_files $AHEAD)" = $AHEAD ]; do
        touch "$S/fill/$1$i" 2>/dev/null || break
        i=$((i + 1)); [ $i -lt 20 ] || break
    done
    expect_eq "the last free inodes are the spares' (free inodes, spares)" "$(free_inodes) $(unnamed_files $AHEAD)" "0 $AHEAD"
}
remove_and_await_inodes "$S"/fill/f{0..9}
spares_take_last_inodes again
check "a create in another directory gets an inode a spare held" touch "$S/elsewhere/x"
check "and the next one the other's" touch "$S/elsewhere/y"
check_error "then the disk is full again" "No space left on device" touch "$S/elsewhere/z"
# Likewise for a directory (any node made gets the spare's inode back).
remove_and_await_inodes "$S"/fill/f{10..14}
spares_take_last_inodes more
check "a mkdir gets an inode a spare held" mkdir "$S/elsewhere/d"
"$DPFS" unmount "$SMALL/mnt" || fail "unmount of the small device"
umount "$SMALL" || fail "umount of the small filesystem"

finish
