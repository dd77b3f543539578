#!/usr/bin/env bash
# Any machine (dpfs(1), FILES): a mount table of any size. With 400 other mounts present
# (a Docker host or a snap desktop has hundreds; /proc/self/mountinfo then runs to tens
# of KiB), mount, unlock, lock, the client's checks of the mount (OwnedMount) and
# unmount work; and 60 devices mounted at once, each unlocked, written and locked. The
# scenario runs in a mount namespace of its own, so every mount it makes goes with it.
if [ -z "${DPFS_MANYMOUNTS_NAMESPACE:-}" ]; then
    exec unshare --mount --propagation private env DPFS_MANYMOUNTS_NAMESPACE=1 bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"
DEVICES=${MANYMOUNTS_DEVICES:-60}

scenario_cleanup() {
    local m
    for m in $(awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r); do
        "$DPFS" unmount "$m" >/dev/null 2>&1 || umount -l "$m" 2>/dev/null
    done
    return 0
}

mkdir -p "$WORK/filler"
for i in $(seq 400); do
    mkdir "$WORK/filler/$i" && mount -t tmpfs -o size=64k "filler$i" "$WORK/filler/$i" || { fail "tmpfs mount $i"; finish; }
done
log "/proc/self/mountinfo: $(wc -c < /proc/self/mountinfo) bytes, $(wc -l < /proc/self/mountinfo) mounts"
check "the mount table is far longer than a page" test "$(wc -c < /proc/self/mountinfo)" -gt 32768

setup_device
check "mount with 400 other mounts" "$DPFS" status "$MNT"
check "unlock (the client's mount checks)" unlock_device
printf 'written\n' > "$MNT/Documents/a.txt"
setfattr -n user.dpfs.protection -v complete "$MNT/Documents/a.txt"
check "lock" "$DPFS" lock "$MNT" --now
check_error "the complete file is refused" "Operation not permitted" cat "$MNT/Documents/a.txt"
check "unmount" "$DPFS" unmount "$MNT"
check_fails "nothing is left mounted" grep -qs " $MNT fuse" /proc/self/mounts

# Many devices at once, on top of the 400.
ok_mount=0; ok_unlock=0; ok_write=0; ok_lock=0
for i in $(seq "$DEVICES"); do
    mkdir -p "$WORK/m$i"
    "$DPFS" init "$WORK/d$i" --passcode-file "$PASS" --secret-store "file:$SECRETS" >/dev/null \
        && "$DPFS" mount "$WORK/d$i" "$WORK/m$i" --grace-period 0 >/dev/null && ok_mount=$((ok_mount + 1))
done
expect_eq "$DEVICES devices mounted at once" "$ok_mount" "$DEVICES"
log "mounted in $SECONDS s"
for i in $(seq "$DEVICES"); do
    "$DPFS" unlock "$WORK/m$i" --passcode-file "$PASS" >/dev/null && ok_unlock=$((ok_unlock + 1))
    printf 'device %s\n' "$i" > "$WORK/m$i/Documents/own.txt" \
        && setfattr -n user.dpfs.protection -v complete "$WORK/m$i/Documents/own.txt" && ok_write=$((ok_write + 1))
done
expect_eq "each unlocked" "$ok_unlock" "$DEVICES"
expect_eq "each written" "$ok_write" "$DEVICES"
readable=0
for i in $(seq "$DEVICES"); do
    [ "$(cat "$WORK/m$i/Documents/own.txt")" = "device $i" ] && readable=$((readable + 1))
    "$DPFS" lock "$WORK/m$i" --now >/dev/null && ok_lock=$((ok_lock + 1))
done
expect_eq "each reads its own file back" "$readable" "$DEVICES"
expect_eq "each locked" "$ok_lock" "$DEVICES"
refused=0
for i in $(seq "$DEVICES"); do cat "$WORK/m$i/Documents/own.txt" >/dev/null 2>&1 || refused=$((refused + 1)); done
expect_eq "each refuses its complete file" "$refused" "$DEVICES"
# All at once: each unmount waits for its daemon to finish.
for i in $(seq "$DEVICES"); do "$DPFS" unmount "$WORK/m$i" > "$WORK/unmount$i.out" 2>&1 & done
wait
expect_eq "each unmounts" "$(grep -c " $WORK/m[0-9]* fuse" /proc/self/mounts)" "0"
finish
