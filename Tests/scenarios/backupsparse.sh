#!/usr/bin/env bash
# dpfs backup and restore of sparse files: the backup stores only their data extents
# (found through the mount with SEEK_DATA and SEEK_HOLE), so it is far smaller than
# their apparent size, and restore makes holes again: each restored file has its exact
# size, its bytes at their offsets, and about the blocks it had (a file with data
# between holes, one ending in a hole, one that is all hole). A backup in the first
# format (Tests/fixtures/backup-v1.dpfsbackup, written by dpfs 0.11.0) still restores;
# a backup of a format newer than this dpfs's is refused as such, nothing created.
source "$(dirname "$0")/lib.sh"

FIXTURES="$(cd "$(dirname "$0")/.." && pwd)/fixtures"
setup_restore_target sparse.dpfsbackup
scenario_cleanup() { unmount_restore_target; }
MiB=$((1024 * 1024))
# put_at FILE OFFSET TEXT: TEXT written at OFFSET of FILE, the rest left as it is.
put_at() { printf '%s' "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
# get_at FILE OFFSET COUNT: COUNT bytes of FILE from OFFSET.
get_at() { dd if="$1" bs=1 skip="$2" count="$3" status=none; }

setup_device
check "unlock" unlock_device
D="$MNT/Documents"
truncate -s 1G "$D/sparse"                       # 3 bytes at 500 MiB, holes around them
put_at "$D/sparse" $((500 * MiB)) abc
truncate -s 64M "$D/mixed"                       # data at the start, middle and end
put_at "$D/mixed" 0 start; put_at "$D/mixed" $((32 * MiB)) middle; put_at "$D/mixed" $((64 * MiB - 3)) end
printf 'head' > "$D/tail-hole"; truncate -s 300M "$D/tail-hole"   # ends in a hole
truncate -s 200M "$D/all-hole"                   # no data at all
head -c 300000 /dev/urandom > "$D/dense"         # no hole
touch "$D/empty"
apparent=$(( (1024 + 64 + 300 + 200) * MiB ))
for name in sparse mixed tail-hole all-hole dense empty; do
    eval "blocks_$(printf %s "$name" | tr - _)=$(stat -c %b "$D/$name")"
done
log "blocks in use through the mount: sparse $blocks_sparse, mixed $blocks_mixed, tail-hole $blocks_tail_hole, all-hole $blocks_all_hole"

check "backup" "$DPFS" backup "$MNT" --to "$BACKUP" --password-file "$PASSWORD"
size=$(stat -c %s "$BACKUP")
[ "$size" -lt $((4 * MiB)) ] && pass "the backup holds the data, not the holes ($size bytes for $apparent apparent)" \
    || fail "the backup holds the data, not the holes" "$size bytes for $apparent apparent"

check "restore" "$DPFS" restore "$NEW" --from "$BACKUP" --password-file "$PASSWORD" --passcode-file "$PASS2" \
    --secret-store "file:$SECRETS"
check "mount the restored device" "$DPFS" mount "$NEW" "$MNT2"
check "unlock it" "$DPFS" unlock "$MNT2" --passcode-file "$PASS2"
R="$MNT2/Documents"
for name in sparse mixed tail-hole all-hole dense empty; do
    expect_eq "$name keeps its size" "$(stat -c %s "$R/$name")" "$(stat -c %s "$D/$name")"
done
# Block counts: what the source has, within a few blocks (where a write ends in a
# block, the mount may round differently); nowhere near the apparent size.
for name in sparse mixed tail-hole all-hole; do
    before=$(eval "echo \$blocks_$(printf %s "$name" | tr - _)")
    after=$(stat -c %b "$R/$name")
    [ "$after" -le $((before + 64)) ] && pass "$name keeps its holes ($after blocks, $before before)" \
        || fail "$name keeps its holes" "$after blocks, $before before"
done
expect_eq "sparse: its bytes at 500 MiB" "$(get_at "$R/sparse" $((500 * MiB - 2)) 7 | od -An -c | tr -s ' ')" \
    " \\0 \\0 a b c \\0 \\0"
expect_eq "mixed: its bytes at the start, middle and end" \
    "$(get_at "$R/mixed" 0 5)/$(get_at "$R/mixed" $((32 * MiB)) 6)/$(get_at "$R/mixed" $((64 * MiB - 3)) 3)" "start/middle/end"
check "mixed is byte-exact" cmp "$D/mixed" "$R/mixed"
check "tail-hole is byte-exact" cmp "$D/tail-hole" "$R/tail-hole"
expect_eq "all-hole reads as zeros" "$(tr -d '\0' < "$R/all-hole" | wc -c)" "0"
check "dense is byte-exact" cmp "$D/dense" "$R/dense"
check "unmount the restored device" "$DPFS" unmount "$MNT2"

# --- a backup of the first format, written by dpfs 0.11.0, still restores ------------
printf 'fixture backup password\n' > "$WORK/fixture-password"; chmod 600 "$WORK/fixture-password"
check "a format-1 backup restores" "$DPFS" restore "$WORK/from-v1" --from "$FIXTURES/backup-v1.dpfsbackup" \
    --password-file "$WORK/fixture-password" --passcode-file "$PASS2" --secret-store "file:$SECRETS"
check "mount it" "$DPFS" mount "$WORK/from-v1" "$MNT2"
check "unlock it" "$DPFS" unlock "$MNT2" --passcode-file "$PASS2"
expect_eq "its files are whole" "$(sha256sum < "$MNT2/Documents/notes/pattern.bin" | cut -d' ' -f1) $(cat "$MNT2/Documents/hello.txt")" \
    "8df438976bca269929b9e1968aa7dafebf3fe3a8b4bbc1abbc56a7ed0eb4bb66 hello from format 1"
expect_eq "its class, link and item are kept" \
    "$("$DPFS" protection get "$MNT2/Documents/hello.txt") $(readlink "$MNT2/Documents/link") $("$DPFS" keychain find "$MNT2" --service fixture --account a)" \
    "complete notes/pattern.bin fixture-secret"
check "unmount it" "$DPFS" unmount "$MNT2"

# --- a backup of a newer format is refused as such --------------------------------------
cp "$BACKUP" "$WORK/newer"
printf '\x00\x63' | dd of="$WORK/newer" bs=1 seek=8 conv=notrunc status=none   # format version 99
out=$("$DPFS" restore "$WORK/from-newer" --from "$WORK/newer" --password-file "$PASSWORD" --passcode-file "$PASS2" \
      --secret-store "file:$SECRETS" 2>&1)
status=$?
[ "$status" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q "newer dpfs, in format version 99" \
    && pass "a newer format is refused with one line: $out" || fail "a newer format is refused with one line" "exit $status: $out"
[ ! -e "$WORK/from-newer" ] && [ -z "$(ls -A "$WORK" | grep '^\.from-newer')" ] \
    && pass "and nothing was created" || fail "and nothing was created" "$(ls -A "$WORK")"
finish
