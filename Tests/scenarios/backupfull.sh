#!/usr/bin/env bash
# dpfs restore onto a filesystem too small for the backup (a 48 MiB loop filesystem):
# it fails with one line that names the file by its path in the sandbox and the device
# directory being restored, not the temporary mount it wrote through, and leaves
# nothing behind there.
source "$(dirname "$0")/lib.sh"

IMG="$WORK/disk.img"; SMALL="$WORK/small"
BACKUP="$WORK/big.dpfsbackup"
PASSWORD="$WORK/password.txt"
PASS2="$WORK/pass2.txt"
printf 'correct horse battery staple\n' > "$PASSWORD"
printf '5678\n' > "$PASS2"
chmod 600 "$PASSWORD" "$PASS2"
truncate -s 48M "$IMG" && mkfs.ext4 -q -F "$IMG" && mkdir -p "$SMALL" && mount -o loop "$IMG" "$SMALL" \
    || { fail "a 48 MiB loop filesystem for the test"; finish; }
scenario_cleanup() {
    # A restore's temporary mount (its device on $SMALL, its mount point wherever the
    # dpfs under test put it), if a check failed before it was taken down.
    awk -v w="dpfs:$SMALL/" 'index($1, w) == 1 {print $2}' /proc/mounts | while read -r m; do
        fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
    done
    umount "$SMALL" 2>/dev/null || umount -l "$SMALL"
}

setup_device
check "unlock" unlock_device
mkdir "$MNT/Documents/doc"
head -c 60000000 /dev/urandom > "$MNT/Documents/doc/x"
check "backup" "$DPFS" backup "$MNT" --to "$BACKUP" --password-file "$PASSWORD"

out=$("$DPFS" restore "$SMALL/restored" --from "$BACKUP" --password-file "$PASSWORD" --passcode-file "$PASS2" \
      --secret-store "file:$SECRETS" 2>&1)
status=$?
[ "$status" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] \
    && printf '%s' "$out" | grep -q "into $SMALL/restored: write Documents/doc/x: No space left on device; nothing was restored" \
    && pass "out of space: one line naming the file in the sandbox and the device: $out" \
    || fail "out of space: one line naming the file in the sandbox and the device" "exit $status: $out"
case "$out" in *//*|*dpfs-restore*|*.mnt*) fail "it names no temporary mount" "$out" ;; *) pass "it names no temporary mount" ;; esac
expect_eq "nothing is left on the small filesystem" "$(ls -A "$SMALL" | grep -v '^lost+found$')" ""
finish
