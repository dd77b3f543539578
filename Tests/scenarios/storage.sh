#!/usr/bin/env bash
# On disk: no plaintext and no key in the device directory; every block bound
# to its file and position (tampering reads as EIO, never as wrong plaintext); a class
# lowered rewraps the key without touching the content (a raise reseals it: raise.sh).
source "$(dirname "$0")/lib.sh"

setup_device
unlock_device
D="$MNT/Documents"
MARKER="PLAINTEXT-MARKER-$$-dpfs"
for c in none complete completeUnlessOpen untilFirstAuth; do
    { for i in $(seq 1 3000); do echo "$MARKER $c line $i"; done; } > "$D/$c.txt"
    setfattr -n user.dpfs.protection -v "$c" "$D/$c.txt"
done
sync
if grep -rqa "$MARKER" "$DEV"; then fail "no plaintext of any class in the device directory"
else pass "no plaintext of any class in the device directory"; fi
grep -qa '1234' "$DEV/keybag.json" && fail "passcode not in the keybag" || pass "passcode not in the keybag"

NB=$(backing "$D/none.txt")
expect_eq "backing file starts with the DPFS magic" "$(head -c 4 "$NB")" "DPFS"
size=$(stat -c %s "$D/none.txt")
expect_eq "backing size = 512 + blocks × 4136 (+ short tail)" "$(stat -c %s "$NB")" \
    "$((512 + size / 4096 * 4136 + (size % 4096 > 0 ? size % 4096 + 40 : 0)))"

# Removed files are freed by the daemon's reapers (NodeReaper.swift): more than their
# backlog at once, and a big one; the space and the backing names must be gone soon
# after the rm (a deadline a loaded machine meets), and the directory removable at once.
mkdir "$D/many"
for i in $(seq 1 400); do echo "$i" > "$D/many/f$i"; done
head -c 32M /dev/urandom > "$D/many/big"
sync
avail_before=$(df --output=avail -B1M "$DEV" | tail -1)
check "rm -rf of 401 files and their directory" rm -rf "$D/many"
freed=no
for _ in $(seq 1 600); do
    avail=$(df --output=avail -B1M "$DEV" | tail -1)
    parked=$(find "$DEV/sandbox/.fuse_hidden-orphans" -name 'reaped-*' 2>/dev/null | wc -l)
    if [ "$parked" = 0 ] && [ "$avail" -ge $((avail_before + 24)) ]; then freed=yes; break; fi
    sleep 0.1
done
expect_eq "their space is back and no removed file waits (60 s deadline)" "$freed" "yes"
expect_eq "the directory is gone" "$(ls "$D" | grep -c '^many$')" "0"

# A class lowered rewraps only: every content byte of the backing file stays the same.
UB=$(backing "$D/untilFirstAuth.txt")
tail -c +513 "$UB" | sha256sum > "$WORK/before"
check "class change untilFirstAuth → none" setfattr -n user.dpfs.protection -v none "$D/untilFirstAuth.txt"
tail -c +513 "$UB" | sha256sum > "$WORK/after"
check "a lowering leaves the ciphertext unchanged" cmp "$WORK/before" "$WORK/after"

# Tampering: work on copies so each case starts from a good file.
cp "$D/none.txt" "$WORK/good.txt"
make_victim() { rm -f "$D/victim.txt"; cp "$WORK/good.txt" "$D/victim.txt"; sync; echo 3 > /proc/sys/vm/drop_caches; VB=$(backing "$D/victim.txt"); }

make_victim
flip_bit "$VB" $((512 + 4136 + 100))
check_error "a flipped bit reads as EIO" "Input/output error" cat "$D/victim.txt"
check "the blocks before the damage still read" sh -c "head -c 4096 '$D/victim.txt' | cmp - '$WORK/good.txt' -n 4096"

make_victim
dd if="$VB" of="$WORK/b0" bs=1 skip=512 count=4136 status=none
dd if="$VB" of="$WORK/b1" bs=1 skip=$((512 + 4136)) count=4136 status=none
dd if="$WORK/b1" of="$VB" bs=1 seek=512 conv=notrunc status=none
dd if="$WORK/b0" of="$VB" bs=1 seek=$((512 + 4136)) conv=notrunc status=none
check_error "two swapped blocks read as EIO" "Input/output error" cat "$D/victim.txt"

make_victim
dd if="$(backing "$D/complete.txt")" of="$VB" bs=1 skip=$((512 + 4136)) seek=$((512 + 4136)) count=4136 conv=notrunc status=none
check_error "a block moved from another file reads as EIO" "Input/output error" cat "$D/victim.txt"

make_victim
truncate -s $((512 + 4136 + 2000)) "$VB"
check_error "a ciphertext cut mid-block reads as EIO" "Input/output error" cat "$D/victim.txt"
# Damage found at open is logged once per file, by the inode number the mount and the
# backing tree share: a program retrying would fill the log. Cut inside a block's
# overhead, the size shows the cut before any block is read.
make_victim
truncate -s $((512 + 4136 + 10)) "$VB"
check_error "a ciphertext cut inside a block's overhead reads as EIO" "Input/output error" cat "$D/victim.txt"
cut_line="a backing file is cut short mid-block (inode $(stat -c %i "$D/victim.txt")): damaged, it reads as EIO"
check "the daemon's log names the cut file" within 30 grep -qF "$cut_line" "$DEV/daemon.log"
check_fails "a second open fails too" cat "$D/victim.txt"
expect_eq "and is not logged again" "$(grep -cF "$cut_line" "$DEV/daemon.log")" "1"

make_victim
flip_bit "$VB" 100
check_error "a flipped bit in the header reads as EIO" "Input/output error" cat "$D/victim.txt"
header_line="a backing file's header does not open (inode $(stat -c %i "$D/victim.txt")): damaged, it reads as EIO"
check "the daemon's log names the file whose header does not open" within 30 grep -qF "$header_line" "$DEV/daemon.log"
check_fails "a second open fails too" cat "$D/victim.txt"
expect_eq "and is not logged again" "$(grep -cF "$header_line" "$DEV/daemon.log")" "1"

cp "$WORK/good.txt" "$D/other.txt"; make_victim
OB=$(backing "$D/other.txt")
dd if="$VB" of="$WORK/h1" bs=512 count=1 status=none
dd if="$OB" of="$VB" bs=512 count=1 conv=notrunc status=none
dd if="$WORK/h1" of="$OB" bs=512 count=1 conv=notrunc status=none
sync; echo 3 > /proc/sys/vm/drop_caches
check_error "swapped headers read as EIO" "Input/output error" cat "$D/victim.txt"

expect_eq "the daemon keeps serving other files" "$(head -1 "$D/none.txt")" "$MARKER none line 1"

# Unmounting right after an rm -rf leaves no removed file waiting in the device.
mkdir "$D/gone"
for i in $(seq 1 300); do echo "$i" > "$D/gone/f$i"; done
rm -rf "$D/gone"
"$DPFS" unmount "$MNT"
expect_eq "an unmount right after an rm -rf leaves no removed file behind" \
    "$(find "$DEV/sandbox/.fuse_hidden-orphans" -name 'reaped-*' 2>/dev/null | wc -l)" "0"
check "mounts again" "$DPFS" mount "$DEV" "$MNT"
unlock_device

# The keybag: an older copy put back, or an edited one, is refused at mount.
cp "$DEV/keybag.json" "$WORK/keybag.old"
printf 'other\n' > "$WORK/new-pass"; chmod 600 "$WORK/new-pass"
check "passcode change" "$DPFS" passcode change "$MNT" --passcode-file "$PASS" --new-passcode-file "$WORK/new-pass"
"$DPFS" unmount "$MNT"
cp "$DEV/keybag.json" "$WORK/keybag.new"
cp "$WORK/keybag.old" "$DEV/keybag.json"
check_error "an older keybag put back is refused" "older" "$DPFS" mount "$DEV" "$MNT"
sed 's/"failedAttempts" : 0/"failedAttempts" : 1/' "$WORK/keybag.new" > "$DEV/keybag.json"
check_error "an edited keybag is refused" "MAC" "$DPFS" mount "$DEV" "$MNT"
cp "$WORK/keybag.new" "$DEV/keybag.json"
check "the current keybag mounts" "$DPFS" mount "$DEV" "$MNT"
finish
