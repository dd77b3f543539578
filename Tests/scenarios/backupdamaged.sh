#!/usr/bin/env bash
# dpfs backup of a device with a damaged file (its backing copy cut short while
# unmounted, so that reading it fails with EIO): by default the backup stops, writes
# nothing, and its one line names the file and the ways on (fsck, --salvage,
# --skip-damaged); with --skip-damaged the file and its further name are left out and
# named on stderr, the backup is written and the command exits 18; a restore of it
# holds every other file and notes what was left out.
source "$(dirname "$0")/lib.sh"

setup_restore_target damaged.dpfsbackup
scenario_cleanup() { unmount_restore_target; }

setup_device
check "unlock" unlock_device
D="$MNT/Documents"
head -c 50000 /dev/urandom > "$WORK/cut.bin"
cp "$WORK/cut.bin" "$D/cutme"
ln "$D/cutme" "$D/cutme-too"
printf 'before\n' > "$D/aaa.txt"
printf 'after\n' > "$D/zzz.txt"
mkdir "$D/sub"; printf 'nested\n' > "$D/sub/kept.txt"
CUT=$(backing "$D/cutme")
"$DPFS" unmount "$MNT"
# Its header and first two blocks (4136 bytes each on disk) stay; the rest is cut off.
truncate -s $((512 + 4136 * 2)) "$CUT"
mount_device
check "unlock again" unlock_device
check_fails "the damaged file fails to read" sh -c "cat '$D/cutme' >/dev/null"
# Cut on a block boundary, the backing size shows no cut: the failed read finds it, and
# the log names the file by the inode number the mount and the backing tree share.
cut_line="a backing file is cut short after 8192 bytes, on a block boundary (inode $(stat -c %i "$D/cutme"))"
check "the daemon's log names the cut file" within 30 grep -qF "$cut_line" "$DEV/daemon.log"
check_fails "a second read fails too" sh -c "cat '$D/cutme-too' >/dev/null"
expect_eq "and is not logged again" "$(grep -cF "$cut_line" "$DEV/daemon.log")" "1"

out=$("$DPFS" backup "$MNT" --to "$BACKUP" --password-file "$PASSWORD" 2>&1)
status=$?
expect_eq "a damaged file ends the backup: exit 1" "$status" "1"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q "Documents/cutme" \
    && printf '%s' "$out" | grep -q "dpfs fsck $DEV" && printf '%s' "$out" | grep -q -- "--salvage" \
    && printf '%s' "$out" | grep -q -- "--skip-damaged" && printf '%s' "$out" | grep -q "no backup was written" \
    && pass "one line naming the file and the ways on: $out" || fail "one line naming the file and the ways on" "$out"
[ ! -e "$BACKUP" ] && [ -z "$(ls -A "$WORK" | grep 'damaged.dpfsbackup')" ] \
    && pass "and no backup is written" || fail "and no backup is written" "$(ls -A "$WORK")"

"$DPFS" backup "$MNT" --to "$BACKUP" --password-file "$PASSWORD" --skip-damaged >"$WORK/out" 2>"$WORK/err"
status=$?
expect_eq "--skip-damaged: exit 18" "$status" "18"
grep -q "left out $MNT/Documents/cutme:" "$WORK/err" && grep -q "left out $MNT/Documents/cutme-too:" "$WORK/err" \
    && grep -q "dpfs fsck $DEV" "$WORK/err" \
    && pass "each damaged name is on stderr" || fail "each damaged name is on stderr" "$(cat "$WORK/err")"
grep -q "^backed up 3 files" "$WORK/out" && pass "the backup counts the files it holds" || fail "the backup counts the files it holds" "$(cat "$WORK/out")"
[ -s "$BACKUP" ] && pass "the backup is written" || fail "the backup is written"

"$DPFS" restore "$NEW" --from "$BACKUP" --password-file "$PASSWORD" --passcode-file "$PASS2" \
    --secret-store "file:$SECRETS" >"$WORK/out" 2>"$WORK/err"
status=$?
expect_eq "it restores" "$status" "0"
grep -q "left out 2 damaged files" "$WORK/err" && pass "noting what it lacks" || fail "noting what it lacks" "$(cat "$WORK/err")"
check "mount the restored device" "$DPFS" mount "$NEW" "$MNT2"
check "unlock it" "$DPFS" unlock "$MNT2" --passcode-file "$PASS2"
R="$MNT2/Documents"
expect_eq "the other files are there" "$(cat "$R/aaa.txt" "$R/zzz.txt" "$R/sub/kept.txt")" "before
after
nested"
[ ! -e "$R/cutme" ] && [ ! -e "$R/cutme-too" ] && pass "the damaged file is not, by either name" \
    || fail "the damaged file is not, by either name" "$(ls -la "$R")"
check "unmount the restored device" "$DPFS" unmount "$MNT2"
finish
