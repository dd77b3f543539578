#!/usr/bin/env bash
# Issue 7: dpfs fsck finds every damaged file and block, exits non-zero, and
# --salvage copies out what still reads.
source "$(dirname "$0")/lib.sh"

setup_device
unlock_device
D="$MNT/Documents"
head -c 50000 /dev/urandom > "$WORK/a.bin"
cp "$WORK/a.bin" "$D/a.bin"; cp "$WORK/a.bin" "$D/b.bin"; cp "$WORK/a.bin" "$D/c.bin"
setfattr -n user.dpfs.protection -v complete "$D/b.bin"
echo small > "$D/small.txt"
# Symlinks whose sealed targets are long: up to the longest sealed in the link itself
# (3031 bytes), and one (4095) kept in a file of its own.
long_target=$(head -c 730 /dev/zero | tr '\0' t)
longest_target=$(head -c 3031 /dev/zero | tr '\0' u)
ln -s "$long_target" "$D/link730"
ln -s "$longest_target" "$D/link3031"
ln -s "$(head -c 4095 /dev/zero | tr '\0' v)" "$D/link4095"
A=$(backing "$D/a.bin"); BB=$(backing "$D/b.bin"); C=$(backing "$D/c.bin")
"$DPFS" unmount "$MNT"

check_fails "fsck refuses a wrong passcode" sh -c "echo nope | '$DPFS' fsck '$DEV'"
out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS"); rc=$?
expect_eq "a clean device: exit 0" "$rc" "0"
case "$out" in *"clean"*) pass "a clean device is reported clean" ;; *) fail "a clean device is reported clean" "$out" ;; esac

flip_bit "$A" $((512 + 4136 * 3 + 7))   # block 3
flip_bit "$BB" $((512 + 4136 * 0 + 60))  # block 0
printf 'XXXX' | dd of="$C" bs=1 seek=0 conv=notrunc status=none                          # magic
out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" --salvage "$WORK/salvage"); rc=$?
expect_eq "damage: exit 1" "$rc" "1"
case "$out" in *"Documents/a.bin: 1 damaged block (3)"*) pass "names a.bin's damaged block 3" ;; *) fail "names a.bin's damaged block 3" "$out" ;; esac
case "$out" in *"Documents/b.bin: 1 damaged block (0)"*) pass "names b.bin's damaged block 0" ;; *) fail "names b.bin's damaged block 0" "$out" ;; esac
case "$out" in *"Documents/c.bin: header damaged"*) pass "names c.bin's damaged header" ;; *) fail "names c.bin's damaged header" "$out" ;; esac
case "$out" in *small.txt*) fail "does not flag an intact file" "$out" ;; *) pass "does not flag an intact file" ;; esac
cmp -s <(head -c 12288 "$WORK/a.bin") <(head -c 12288 "$WORK/salvage/Documents/a.bin") && pass "salvage keeps the blocks before the damage" || fail "salvage keeps the blocks before the damage"
cmp -s <(tail -c +16385 "$WORK/a.bin") <(tail -c +16385 "$WORK/salvage/Documents/a.bin") && pass "salvage keeps the blocks after the damage" || fail "salvage keeps the blocks after the damage"
expect_eq "salvage zero-fills the damaged block" "$(dd if="$WORK/salvage/Documents/a.bin" bs=4096 skip=3 count=1 status=none | tr -d '\0' | wc -c)" "0"
expect_eq "salvage copies intact files whole" "$(cat "$WORK/salvage/Documents/small.txt")" "small"
case "$out" in *link730*|*link3031*|*link4095*) fail "long symlink targets are not flagged" "$out" ;; *) pass "long symlink targets are not flagged" ;; esac
expect_eq "and salvage copies them (730, 3031 and 4095 bytes)" \
    "$(readlink "$WORK/salvage/Documents/link730" | wc -c)/$(readlink "$WORK/salvage/Documents/link3031" | wc -c)/$(readlink "$WORK/salvage/Documents/link4095" | wc -c)" "731/3032/4096"
rm -f "$DEV"/sandbox/.fuse_hidden-target.*
out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" 2>&1)
case "$out" in *"Documents/link4095: symlink target does not open"*) pass "a long target whose file is gone is reported: $(printf '%s' "$out" | grep link4095)" ;;
                *) fail "a long target whose file is gone is reported" "$out" ;; esac
expect_eq "the salvage directory is the owner's alone (it holds plaintext)" "$(stat -c %a "$WORK/salvage")" "700"
# A salvage target that cannot take the files is refused before anything is read.
touch "$WORK/a-file"
for target in "$WORK/a-file" /proc/dpfs-salvage; do
    out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" --salvage "$target" 2>&1); rc=$?
    case "$rc/$out" in 1/Error:*salvage*) pass "salvage into $target is refused: $out" ;;
                        *) fail "salvage into $target is refused" "exit $rc: $out" ;; esac
done
mount_device
check_fails "fsck refuses a mounted device" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
finish
