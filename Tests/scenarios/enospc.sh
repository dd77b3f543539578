#!/usr/bin/env bash
# Issue 7, full disk: on a small filesystem, a write that meets ENOSPC fails with
# ENOSPC and leaves the file as it was before that write; metadata stays whole.
source "$(dirname "$0")/lib.sh"

IMG="$WORK/disk.img"; SMALL="$WORK/small"
truncate -s 48M "$IMG" && mkfs.ext4 -q -F "$IMG" && mkdir -p "$SMALL" && mount -o loop "$IMG" "$SMALL" \
    || { fail "a 48 MiB loop filesystem for the test"; finish; }
trap 'cleanup_small' EXIT
cleanup_small() { cleanup_mount_only; umount "$SMALL" 2>/dev/null; rm -rf "$WORK"; }
cleanup_mount_only() {
    if grep -qs " $MNT fuse" /proc/mounts; then "$DPFS" unmount "$MNT" 2>/dev/null || fusermount3 -uz "$MNT"; fi
}
DEV="$SMALL/device"
setup_device
unlock_device
D="$MNT/Documents"

head -c 3000000 /dev/urandom > "$WORK/base"
cp "$WORK/base" "$D/keep.bin"
mkdir "$D/d1"
printf '9999\n' > "$WORK/wrong"; chmod 600 "$WORK/wrong"
sync
# Fill the disk.
dd if=/dev/urandom of="$D/filler" bs=1M count=100 2>"$WORK/dd.err"
grep -q "No space left on device" "$WORK/dd.err" && pass "filling the disk ends in ENOSPC" || fail "filling the disk ends in ENOSPC" "$(cat "$WORK/dd.err")"
# Appending to a file on the full disk fails cleanly and leaves it as it was.
if head -c 2000000 /dev/urandom >> "$D/keep.bin" 2>"$WORK/append.err"; then
    fail "an append on a full disk fails"
else
    grep -q "No space left on device" "$WORK/append.err" && pass "an append on a full disk fails with ENOSPC" || fail "an append on a full disk fails with ENOSPC" "$(cat "$WORK/append.err")"
fi
check "the file keeps its content before the failed write" cmp "$WORK/base" "$D/keep.bin"
check "the filler reads back without EIO" sh -c "cat '$D/filler' > /dev/null"
# Keybag saves on the full disk (a directory's lowered class, a wrong passcode) fail;
# none may leave a wrong guess uncounted or the device unmountable (its record two
# generations ahead of its keybag reads as an old copy put back). Failed writes give
# back what they took, and a lock the daemon's spare file: the disk is filled to its
# last block again, beside the device, before each step.
fill_disk() {
    dd if=/dev/zero of="$SMALL/pad.$1" bs=64k 2>/dev/null; dd if=/dev/zero of="$SMALL/pad.$1.tail" bs=1k 2>/dev/null; sync
}
fill_disk 1
check_error "lowering a directory's class on the full disk fails with ENOSPC" "No space left on device" \
    setfattr -n user.dpfs.protection -v none "$D/d1"
check "lock" "$DPFS" lock "$MNT" --now
fill_disk 2
"$DPFS" unlock "$MNT" --passcode-file "$WORK/wrong" >/dev/null 2>"$WORK/wrong.err"
expect_eq "a wrong passcode on the full disk is refused as wrong (12)" "$?" "12"
expect_eq "and counted" "$("$DPFS" status "$MNT" --json | json_field failedAttempts)" "1"
check_error "until it is saved no passcode is tried, not even the right one" "could not be saved" \
    "$DPFS" unlock "$MNT" --passcode-file "$PASS"
expect_eq "so the device stays locked" "$(state_of)" "locked"
check "making room" rm "$D/filler" "$SMALL"/pad.*
check "then the right passcode unlocks" "$DPFS" unlock "$MNT" --passcode-file "$PASS"
expect_eq "and the count is back to 0" "$("$DPFS" status "$MNT" --json | json_field failedAttempts)" "0"
"$DPFS" unmount "$MNT"
check "the device mounts again" mount_device
unlock_device
check "writes work again" sh -c "head -c 1000000 /dev/urandom > '$D/after.bin'"
check "class changes work again" setfattr -n user.dpfs.protection -v complete "$D/keep.bin"
"$DPFS" unmount "$MNT"
check "fsck: no torn metadata" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
finish
