#!/usr/bin/env bash
# dpfs fsck finds every damaged file and block and every file cut short, exits
# non-zero, and --salvage copies out what still reads, also when the keychain is
# damaged or not the one the device's record names: the files do not depend on it.
source "$(dirname "$0")/lib.sh"

setup_device
unlock_device
D="$MNT/Documents"
head -c 50000 /dev/urandom > "$WORK/a.bin"
cp "$WORK/a.bin" "$D/a.bin"; cp "$WORK/a.bin" "$D/b.bin"; cp "$WORK/a.bin" "$D/c.bin"
setfattr -n user.dpfs.protection -v complete "$D/b.bin"
echo small > "$D/small.txt"
# Two files of 1,000,000 bytes, cut short below: on a block boundary and inside a block.
head -c 1000000 /dev/urandom > "$WORK/cut.bin"
cp "$WORK/cut.bin" "$D/cutme"; cp "$WORK/cut.bin" "$D/cutin"
# 8 MiB never written but its last byte: a sparse file, whose copy must stay sparse.
truncate -s 8M "$D/sparse"; printf 'z' >> "$D/sparse"
# Data, a 64 MiB hole, then data again, one block of which is damaged below: the walk
# skips the hole and still finds the block after it.
head -c 8192 /dev/urandom > "$WORK/gap.bin"; truncate -s $((8192 + 67108864)) "$WORK/gap.bin"
head -c 12288 /dev/urandom >> "$WORK/gap.bin"
cp --sparse=always "$WORK/gap.bin" "$D/gap.bin"
for service in one two three; do
    printf 'secret-%s' "$service" | "$DPFS" keychain add "$MNT" --service "$service" --account a >/dev/null \
        || fail "keychain add $service"
done
# Symlinks whose sealed targets are long: up to the longest sealed in the link itself
# (3031 bytes), and one (4095) kept in a file of its own.
long_target=$(head -c 730 /dev/zero | tr '\0' t)
longest_target=$(head -c 3031 /dev/zero | tr '\0' u)
ln -s "$long_target" "$D/link730"
ln -s "$longest_target" "$D/link3031"
ln -s "$(head -c 4095 /dev/zero | tr '\0' v)" "$D/link4095"
A=$(backing "$D/a.bin"); BB=$(backing "$D/b.bin"); C=$(backing "$D/c.bin")
CUTME=$(backing "$D/cutme"); CUTIN=$(backing "$D/cutin"); GAP=$(backing "$D/gap.bin")
"$DPFS" unmount "$MNT"

check_fails "fsck refuses a wrong passcode" sh -c "echo nope | '$DPFS' fsck '$DEV'"
out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS"); rc=$?
expect_eq "a clean device: exit 0" "$rc" "0"
case "$out" in *"clean"*) pass "a clean device is reported clean" ;; *) fail "a clean device is reported clean" "$out" ;; esac

flip_bit "$A" $((512 + 4136 * 3 + 7))   # block 3
flip_bit "$BB" $((512 + 4136 * 0 + 60))  # block 0
printf 'XXXX' | dd of="$C" bs=1 seek=0 conv=notrunc status=none                          # magic
truncate -s $((512 + 4136 * 100)) "$CUTME"          # after block 99
truncate -s $((512 + 4136 * 150 + 1000)) "$CUTIN"   # inside block 150
flip_bit "$GAP" $((512 + 4136 * 16387 + 9))          # the second block after the hole
out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" --salvage "$WORK/salvage"); rc=$?
expect_eq "damage: exit 1" "$rc" "1"
case "$out" in *"Documents/a.bin: 1 damaged block (3)"*) pass "names a.bin's damaged block 3" ;; *) fail "names a.bin's damaged block 3" "$out" ;; esac
case "$out" in *"Documents/b.bin: 1 damaged block (0)"*) pass "names b.bin's damaged block 0" ;; *) fail "names b.bin's damaged block 0" "$out" ;; esac
case "$out" in *"Documents/c.bin: header damaged"*) pass "names c.bin's damaged header" ;; *) fail "names c.bin's damaged header" "$out" ;; esac
case "$out" in *small.txt*) fail "does not flag an intact file" "$out" ;; *) pass "does not flag an intact file" ;; esac
case "$out" in *"Documents/cutme: cut short after 409600 bytes: the rest is lost; the salvaged copy holds those 409600 bytes, short of the original"*)
                   pass "a file cut on a block boundary is reported cut, with what is left" ;;
               *) fail "a file cut on a block boundary is reported cut, with what is left" "$out" ;; esac
if printf '%s\n' "$out" | grep "cutme: " | grep -q "damaged block"; then
    fail "and not as a damaged block" "$out"
else
    pass "and not as a damaged block"
fi
cmp -s <(head -c 409600 "$WORK/cut.bin") "$WORK/salvage/Documents/cutme" && pass "its salvaged copy is all that is left of it" \
    || fail "its salvaged copy is all that is left of it"
case "$out" in *"Documents/cutin: its last block (150) does not open: cut short inside it after 614400 bytes, the rest lost, or that block is damaged; the salvaged copy"*"may be short of the original"*)
                   pass "a file cut inside a block is reported cut (or that block damaged)" ;;
               *) fail "a file cut inside a block is reported cut (or that block damaged)" "$out" ;; esac
cmp -s <(head -c 614400 "$WORK/cut.bin") <(head -c 614400 "$WORK/salvage/Documents/cutin") && pass "its salvaged copy keeps the blocks before the cut" \
    || fail "its salvaged copy keeps the blocks before the cut"
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
case "$out" in *"Documents/gap.bin: 1 damaged block (16387) of 16389"*) pass "the block after a 64 MiB hole is checked, the hole skipped" ;;
               *) fail "the block after a 64 MiB hole is checked, the hole skipped" "$out" ;; esac
cmp -s <(head -c $((8192 + 67108864 + 4096)) "$WORK/gap.bin") <(head -c $((8192 + 67108864 + 4096)) "$WORK/salvage/Documents/gap.bin") \
    && pass "its salvaged copy holds the data and the hole before the damage" \
    || fail "its salvaged copy holds the data and the hole before the damage"
expect_eq "the salvage directory is the owner's alone (it holds plaintext)" "$(stat -c %a "$WORK/salvage")" "700"
cmp -s <(head -c 8388608 /dev/zero; printf z) "$WORK/salvage/Documents/sparse" && pass "a sparse file is salvaged whole" \
    || fail "a sparse file is salvaged whole"
blocks=$(stat -c %b "$WORK/salvage/Documents/sparse")
[ "$blocks" -lt 1024 ] && pass "its copy keeps the holes ($blocks blocks of 512 bytes for 8 MiB)" \
    || fail "its copy keeps the holes" "$blocks blocks of 512 bytes for 8 MiB"
# A salvage target that cannot take the files is refused before anything is read.
touch "$WORK/a-file"
for target in "$WORK/a-file" /proc/dpfs-salvage; do
    out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" --salvage "$target" 2>&1); rc=$?
    case "$rc/$out" in 1/Error:*salvage*) pass "salvage into $target is refused: $out" ;;
                        *) fail "salvage into $target is refused" "exit $rc: $out" ;; esac
done
# Nor may it write plaintext into the device directory or the secret store's, by any
# spelling of their paths.
ln -s "$DEV" "$WORK/device-link"
mkdir "$WORK/elsewhere"
for target in "$DEV/out" "$DEV/sandbox/salvage" "$WORK/device-link/out" "$WORK/elsewhere/../device/out" "$SECRETS/out"; do
    out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" --salvage "$target" 2>&1); rc=$?
    case "$rc/$out" in "1/Error: salvage directory "*" is inside the "*" directory "*)
                            [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && [ ! -e "$target" ] \
                                && pass "salvage into $target is refused, with nothing written: $out" \
                                || fail "salvage into $target is refused, with nothing written" "$out" ;;
                        *) fail "salvage into $target is refused" "exit $rc: $out" ;; esac
done
# A salvage directory that fills up: one Error line, exit 1, and every copy left in
# it is whole (the same as the salvage above); the one cut short is removed.
mkdir "$WORK/small"
if unshare --mount --propagation private mount -t tmpfs -o size=256k tmpfs "$WORK/small" 2>/dev/null; then
    out=$(unshare --mount --propagation private sh -c '
        mount -t tmpfs -o size=256k tmpfs "$1/small" || exit 99
        "$2" fsck "$3" --passcode-file "$4" --salvage "$1/small/out" 2>&1; echo "rc=$?"
        cd "$1/small/out" && find . -type f | while read -r f; do
            cmp -s "$f" "$1/salvage/$f" && echo "whole: $f" || echo "not whole: $f"
        done' sh "$WORK" "$DPFS" "$DEV" "$PASS")
    case "$out" in *"rc=1"*) pass "a salvage that runs out of space exits 1" ;;
                   *) fail "a salvage that runs out of space exits 1" "$out" ;; esac
    errors=$(printf '%s\n' "$out" | grep '^Error:')
    case "$errors" in "Error: the salvage stopped: cannot write $WORK/small/out/Documents/"*": No space left on device"*)
                          [ "$(printf '%s\n' "$errors" | wc -l)" = 1 ] && pass "and says why in one line: $errors" \
                              || fail "and says why in one line" "$errors" ;;
                      *) fail "and says why in one line" "$out" ;; esac
    case "$out" in *"not whole: "*) fail "no copy it leaves is short or wrong" "$out" ;;
                   *) pass "no copy it leaves is short or wrong" ;; esac
    case "$out" in *"whole: ./Documents/cutme"*"whole: ./Documents/cutin"*|*"whole: ./Documents/cutin"*"whole: ./Documents/cutme"*)
                       fail "the copy it could not finish is removed" "$out" ;;
                   *) pass "the copy it could not finish is removed" ;; esac
else
    log "skipped: the salvage into a full directory needs a tmpfs in a private mount namespace (unshare -m)"
fi

# The keychain. Its rows are bound to the device's record by a digest, which SQLite's
# structure around them (pages, indexes) is not: fsck runs SQLite's integrity check
# too. A keychain that fails either is reported and left as it was; the files are
# checked and salvaged all the same.
KC="$DEV/keychain.sqlite"
cp -a "$KC" "$WORK/keychain-good"
page_size=$(sqlite3 "$KC" 'PRAGMA page_size')
page_start() { echo $(( ($(sqlite3 "$KC" "SELECT rootpage FROM sqlite_schema WHERE name = '$1'") - 1) * page_size )); }
items_page=$(page_start items)
index_page=$(page_start items_identity)
# fsck_keychain NAME: fsck --salvage into $WORK/NAME; sets out and rc.
fsck_keychain() { out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" --salvage "$WORK/$1" 2>&1); rc=$?; }
kept_as_it_was() {
    cmp -s "$KC" "$WORK/keychain-damaged" && pass "$1: the keychain file is left as it was" \
        || fail "$1: the keychain file is left as it was"
}

# 1. One byte of an index entry: every row is whole, so the record's digest matches;
# SQLite's integrity check names the index. Mounted, a find through it would miss its
# item and the unique index let the item's twin in: the mount refuses it as damaged.
flip_bit "$KC" $((index_page + page_size - 100))
out=$("$DPFS" mount "$DEV" "$MNT" 2>&1); rc=$?
case "$rc/$out" in 1/*"the keychain $KC is damaged (SQLite's integrity check: "*"items_identity"*"fsck $DEV --salvage"*)
                       pass "mount refuses a damaged index as damaged, pointing to fsck --salvage" ;;
                   *) fail "mount refuses a damaged index as damaged, pointing to fsck --salvage" "exit $rc: $out" ;; esac
grep -qs " $MNT fuse" /proc/mounts && "$DPFS" unmount "$MNT"
cp -a "$KC" "$WORK/keychain-damaged"
fsck_keychain salvage-index
case "$rc/$out" in 1/*"keychain.sqlite: damaged"*"items_identity"*) pass "a damaged keychain index is reported: $(printf '%s' "$out" | grep keychain.sqlite)" ;;
                   *) fail "a damaged keychain index is reported" "exit $rc: $out" ;; esac
kept_as_it_was "a damaged index"
# An index is derived from its table: rebuilt (dpfs(5)), no item is lost, and the
# rows, which the record's digest covers, are unchanged.
sqlite3 "$KC" 'REINDEX'
mount_device
unlock_device
expect_eq "after REINDEX the mount finds every item" \
    "$(for s in one two three; do "$DPFS" keychain find "$MNT" --service "$s" --account a; echo; done)" \
    "$(printf 'secret-one\nsecret-two\nsecret-three')"
"$DPFS" unmount "$MNT"

# 2. One byte inside a row's value: SQLite sees nothing wrong, the record's digest
# does. The mount refuses it (an older copy with its counter raised looks the same),
# and points to the salvage; fsck reports it and salvages the files.
cp -a "$WORK/keychain-good" "$KC"
flip_bit "$KC" $((items_page + page_size - 100))
expect_eq "(SQLite's integrity check passes the edited row)" "$(sqlite3 "$KC" 'PRAGMA integrity_check')" ok
out=$("$DPFS" mount "$DEV" "$MNT" 2>&1); rc=$?
case "$rc/$out" in 17/*"it was put back from an older copy, edited or damaged"*"fsck $DEV --salvage"*)
                       pass "mount refuses an edited row, pointing to fsck --salvage" ;;
                   *) fail "mount refuses an edited row, pointing to fsck --salvage" "exit $rc: $out" ;; esac
cp -a "$KC" "$WORK/keychain-damaged"
fsck_keychain salvage-row
case "$rc/$out" in 17/*"keychain.sqlite: the keychain does not match the device's record"*) pass "fsck reports the edited row (exit 17)" ;;
                   *) fail "fsck reports the edited row (exit 17)" "exit $rc: $out" ;; esac
expect_eq "and salvages the files all the same" "$(cat "$WORK/salvage-row/Documents/small.txt" 2>&1)" "small"
case "$out" in *"Documents/a.bin: 1 damaged block (3)"*) pass "and checks them all the same" ;;
               *) fail "and checks them all the same" "$out" ;; esac
kept_as_it_was "an edited row"

# 3. One byte of the items page's structure (its first cell pointer): SQLite calls the
# file damaged, and so do the mount and fsck, never a copy put back.
cp -a "$WORK/keychain-good" "$KC"
flip_bit "$KC" $((items_page + 8))
out=$("$DPFS" mount "$DEV" "$MNT" 2>&1); rc=$?
case "$rc/$out" in *"older copy"*) fail "mount does not call a damaged keychain a copy put back" "$out" ;;
                   1/*"the keychain $KC is damaged (SQLite's integrity check: "*"fsck $DEV --salvage"*)
                       pass "mount says the keychain is damaged and points to fsck --salvage: $out" ;;
                   *) fail "mount says the keychain is damaged and points to fsck --salvage" "exit $rc: $out" ;; esac
check_fails "and nothing is mounted" grep -qs " $MNT fuse" /proc/mounts
cp -a "$KC" "$WORK/keychain-damaged"
fsck_keychain salvage-page
case "$rc/$out" in 1/*"keychain.sqlite: damaged"*) pass "fsck reports the damaged page (exit 1)" ;;
                   *) fail "fsck reports the damaged page (exit 1)" "exit $rc: $out" ;; esac
expect_eq "and salvages the files all the same" "$(cat "$WORK/salvage-page/Documents/small.txt" 2>&1)" "small"
kept_as_it_was "a damaged page"
cp -a "$WORK/keychain-good" "$KC"

mount_device
check_fails "fsck refuses a mounted device" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
finish
