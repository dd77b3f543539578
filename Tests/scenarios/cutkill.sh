#!/usr/bin/env bash
# Crash safety of a shrinking truncate: the daemon is killed at each of its steps (a
# debug build's kill points, DPFS_TEST_KILL_AT) and the file must still read whole
# after a remount: as before the truncate when the kill came before the new last
# block was written, as after it otherwise. fsck names the interrupted cut until an
# open through the mount finishes it. The crash scenario kills at random moments;
# this one replays the few that once left a file reading as EIO.
source "$(dirname "$0")/lib.sh"
require_debug_build
setup_device
"$DPFS" unmount "$MNT"
D="$MNT/Documents"

# The daemon died at its kill point: its mount stays, dead (ENOTCONN), until the next
# mount takes it down; fsck needs only the device directory.
died() {
    for _ in $(seq 1 300); do stat -f "$MNT" 2>&1 | grep -q "Transport endpoint is not connected" && return 0; sleep 0.1; done
    return 1
}

# case: old size, new size, how the cut is made. Each file gets its own kill; then one
# fsck names them all, and one mount opens them all.
cases=("12388 5000 truncate" "5000 100 truncate" "300000 0 truncate" "20000 8192 truncate" "70000 0 o_trunc")
n=0
what=()
for spec in "${cases[@]}"; do
    read -r old new how <<<"$spec"
    for step in shrink-begun shrink-sealed shrink-cut; do
        n=$((n + 1)); name="f$n"; what[n]="$old → $new bytes ($how), killed at $step"
        head -c "$old" /dev/urandom > "$WORK/$name"
        # The kill came before the new last block was written: the old content stands.
        if [ "$step" = shrink-begun ]; then cp "$WORK/$name" "$WORK/$name.want"
        else head -c "$new" "$WORK/$name" > "$WORK/$name.want"; fi
        DPFS_TEST_KILL_AT=$step "$DEBUG" mount "$DEV" "$MNT" >/dev/null || { fail "${what[n]}: mount"; continue; }
        unlock_device >/dev/null
        cp "$WORK/$name" "$D/$name"; sync "$D/$name"
        if [ "$how" = o_trunc ]; then (: > "$D/$name") 2>/dev/null; else truncate -s "$new" "$D/$name" 2>/dev/null; fi
        if died; then pass "${what[n]}: the daemon died there"; else fail "${what[n]}: the daemon died there"; fi
    done
done
report=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" 2>&1)
for i in $(seq 1 "$n"); do
    case "$report" in *"Documents/f$i: a truncate was interrupted"*) pass "${what[i]}: fsck names the interrupted cut" ;;
                      *) fail "${what[i]}: fsck names the interrupted cut" "$(printf '%s' "$report" | grep "f$i:")" ;; esac
done
mount_device; unlock_device >/dev/null
for i in $(seq 1 "$n"); do
    case "${what[i]}" in *shrink-begun) when=before ;; *) when=after ;; esac
    if cmp -s "$WORK/f$i.want" "$D/f$i"; then pass "${what[i]}: reads whole, as $when the truncate"
    else fail "${what[i]}: reads whole, as $when the truncate" "$(cat "$D/f$i" 2>&1 | wc -c) bytes; want $(wc -c < "$WORK/f$i.want")"; fi
    expect_eq "${what[i]}: its size" "$(stat -c %s "$D/f$i")" "$(wc -c < "$WORK/f$i.want")"
done
"$DPFS" unmount "$MNT"
# A release build has no kill points (no test hooks in a release build).
if [ "$DPFS" != "$DEBUG" ]; then
    DPFS_TEST_KILL_AT=shrink-sealed mount_device; unlock_device >/dev/null
    head -c 9000 /dev/urandom > "$D/release"
    check "the release daemon has no kill points: the truncate completes" truncate -s 10 "$D/release"
    expect_eq "the release daemon has no kill points: it is still up" "$(stat -c %s "$D/release" 2>&1)" "10"
    "$DPFS" unmount "$MNT"
fi
report=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" 2>&1); rc=$?
expect_eq "every interrupted cut finished by an open: fsck clean" "$rc" "0"
[ "$rc" = 0 ] || log "$report"
finish
