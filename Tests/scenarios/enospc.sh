#!/usr/bin/env bash
# Issue 7, full disk: on a small filesystem, a write that meets ENOSPC fails with
# ENOSPC and leaves the file as it was before that write (a hole stays a hole, and a
# class raise is refused before it changes anything); metadata stays whole.
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
# Raised once, its class is the keybag's to vouch for: a later change saves the keybag.
setfattr -n user.dpfs.protection -v complete "$D/d1"
# Sparse files whose first block is written and the rest holes.
truncate -s 1000000 "$D/hole" "$D/mapped"
head -c 1000000 /dev/zero > "$WORK/zeros"
# A file whose last block ends its backing file at a page's end: a grow pads that
# block, and the padding is the first byte of it that needs a new disk block.
head -c 3544 /dev/urandom > "$WORK/short"
cp "$WORK/short" "$D/short.txt"
# A file to raise, and a first raise, so that the directory of raises' journals is there.
head -c 2000000 /dev/urandom > "$WORK/raise"
cp "$WORK/raise" "$D/raise.bin"
echo raised > "$D/raised.txt"
check "a raise with room" "$DPFS" protection set complete "$D/raised.txt"
printf '9999\n' > "$WORK/wrong"; chmod 600 "$WORK/wrong"
sync
# Fill the disk. Failed writes give back what they took, and a lock the daemon's
# spare file: the disk is filled to its last block again, beside the device, before
# each step.
fill_disk() {
    dd if=/dev/zero of="$SMALL/pad.$1" bs=64k 2>/dev/null; dd if=/dev/zero of="$SMALL/pad.$1.tail" bs=1k 2>/dev/null; sync
}
dd if=/dev/urandom of="$D/filler" bs=1M count=100 2>"$WORK/dd.err"
grep -q "No space left on device" "$WORK/dd.err" && pass "filling the disk ends in ENOSPC" || fail "filling the disk ends in ENOSPC" "$(cat "$WORK/dd.err")"
# Appending to a file on the full disk fails cleanly and leaves it as it was.
fill_disk 0
if head -c 2000000 /dev/urandom >> "$D/keep.bin" 2>"$WORK/append.err"; then
    fail "an append on a full disk fails"
else
    grep -q "No space left on device" "$WORK/append.err" && pass "an append on a full disk fails with ENOSPC" || fail "an append on a full disk fails with ENOSPC" "$(cat "$WORK/append.err")"
fi
check "the file keeps its content before the failed write" cmp "$WORK/base" "$D/keep.bin"
# A write far past the end of a file pads its short last block to a whole one first.
fill_disk 5
check_error "a write far past a file's end on the full disk fails with ENOSPC" "No space left on device" \
    dd if="$WORK/base" of="$D/short.txt" bs=1 count=1 seek=10000000 conv=notrunc status=none
check "and leaves it as it was" cmp "$WORK/short" "$D/short.txt"
check "the filler reads back without EIO" sh -c "cat '$D/filler' > /dev/null"
# Keybag saves on the full disk (a directory's lowered class, a wrong passcode) fail;
# none may leave a wrong guess uncounted or the device unmountable (its record two
# generations ahead of its keybag reads as an old copy put back).
fill_disk 1
check_error "lowering a directory's class on the full disk fails with ENOSPC" "No space left on device" \
    setfattr -n user.dpfs.protection -v none "$D/d1"
# A write over the written first block and the holes after it (the first pages of
# its range are allocated, the rest are not), by write(2) and through a mapping.
fill_disk 3
check_error "a write into a sparse file's holes on the full disk fails with ENOSPC" "No space left on device" \
    dd if="$WORK/base" of="$D/hole" bs=64k count=1 conv=notrunc status=none
check_fails "so does a mapped write into them, at its msync" python3 - "$D/mapped" <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
with mmap.mmap(fd, 65536) as mapped:
    mapped[0:65536] = os.urandom(65536)
    mapped.flush()
PY
# A raise rewrites the file under a new key through an undo journal as large as a
# chunk of it: with no room for the journal nothing changes.
check_error "raising a file's class on the full disk fails with ENOSPC" "No space left on device" \
    "$DPFS" protection set complete "$D/raise.bin"
expect_eq "and leaves its class as it was" "$("$DPFS" protection get "$D/raise.bin")" "untilFirstAuth"
check "and its content readable" cmp "$WORK/raise" "$D/raise.bin"
expect_eq "and no undo journal behind" "$(ls -A "$DEV/raising" 2>/dev/null)" ""
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
check "the files the failed writes met read as they were" cmp "$WORK/base" "$D/keep.bin"
check "the short one too" cmp "$WORK/short" "$D/short.txt"
check "the sparse file's holes read as zeros after the failed write" cmp "$WORK/zeros" "$D/hole"
check "and after the failed mapped write" cmp "$WORK/zeros" "$D/mapped"
check "writes work again" sh -c "head -c 1000000 /dev/urandom > '$D/after.bin'"
check "and the raise" "$DPFS" protection set complete "$D/raise.bin"
check "which keeps the content" cmp "$WORK/raise" "$D/raise.bin"
check "class changes work again" setfattr -n user.dpfs.protection -v complete "$D/keep.bin"
"$DPFS" unmount "$MNT"
check "fsck: no torn metadata" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
finish
