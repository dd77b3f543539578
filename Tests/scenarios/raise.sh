#!/usr/bin/env bash
# Nothing put back reopens a secret (dpfs(5), "Backing file format"): a file's class
# raised gets a new file key, and its content moves to it (BlockStore/Rekey.swift). An
# older copy of its header, whose slot wraps the old key under the old class, opens
# nothing written after the raise (the attacker here also holds the device secret: the
# file store sits beside the device). A kill at each step of a raise loses nothing: fsck
# names the interrupted raise, and the next open through the mount finishes it.
source "$(dirname "$0")/lib.sh"
require_debug_build

header_of() { head -c 512 "$1"; }
put_header_back() { dd if="$2" of="$1" bs=512 count=1 conv=notrunc status=none; }

setup_device
unlock_device
D="$MNT/Documents"

# The iOS pattern: written with the default class, then raised to complete.
echo "V1 before the raise" > "$D/h1.txt"
check "set none" "$DPFS" protection set none "$D/h1.txt"
B=$(backing "$D/h1.txt")
header_of "$B" > "$WORK/h1-none-header"
check "raise to complete" "$DPFS" protection set complete "$D/h1.txt"
echo "written after the raise" > "$D/h1.txt"
head -c 3000000 /dev/urandom > "$WORK/big"
cp "$WORK/big" "$D/big"
"$DPFS" protection set untilFirstAuth "$D/big"
BB=$(backing "$D/big")
header_of "$BB" > "$WORK/big-old-header"
check "a 3 MB file raised to complete" "$DPFS" protection set complete "$D/big"
check "reads back whole" cmp "$WORK/big" "$D/big"
expect_eq "after the raise the file reads" "$(cat "$D/h1.txt")" "written after the raise"
"$DPFS" unmount "$MNT"

put_header_back "$B" "$WORK/h1-none-header"
put_header_back "$BB" "$WORK/big-old-header"
mount_device   # before first unlock: none opens, complete and untilFirstAuth do not
expect_eq "the old header says none" "$("$DPFS" protection get "$D/h1.txt" | awk '{print $NF}')" "none"
check_error "but what was written after the raise does not open" "Input/output error" cat "$D/h1.txt"
unlock_device
check_error "nor does the raised big file under its old header, unlocked" "Input/output error" cat "$D/big"
"$DPFS" unmount "$MNT"

# A lowering keeps the key: what it protected was readable under the weaker class.
mount_device; unlock_device
printf 'lowered\n' > "$D/low.txt"
"$DPFS" protection set complete "$D/low.txt"
LB=$(backing "$D/low.txt")
before=$(tail -c +513 "$LB" | sha256sum)
check "lower to none" "$DPFS" protection set none "$D/low.txt"
expect_eq "a lowering rewraps only: the content is unchanged" "$(tail -c +513 "$LB" | sha256sum)" "$before"
after_raise() { tail -c +513 "$LB" | sha256sum; }
check "raise again" "$DPFS" protection set complete "$D/low.txt"
check_fails "a raise reseals the content" test "$(after_raise)" = "$before"
expect_eq "which reads back" "$(cat "$D/low.txt")" "lowered"
"$DPFS" unmount "$MNT"

# A sparse file's holes stay holes through a raise.
mount_device; unlock_device
truncate -s 64M "$D/sparse"
printf 'middle' | dd of="$D/sparse" bs=1 seek=33554432 conv=notrunc status=none
SB=$(backing "$D/sparse")
check "a sparse 64 MiB file raised" "$DPFS" protection set complete "$D/sparse"
expect_eq "keeps its holes (under 1 MiB allocated)" "$([ "$(du -k "$SB" | cut -f1)" -lt 1024 ] && echo yes)" "yes"
expect_eq "and reads back" "$(dd if="$D/sparse" bs=1 skip=33554432 count=6 status=none)" "middle"
"$DPFS" unmount "$MNT"

# A damaged block does not stop a raise: it stays damaged, the rest moves.
mount_device; unlock_device
head -c 20000 /dev/urandom > "$WORK/dmg"
cp "$WORK/dmg" "$D/dmg"; sync "$D/dmg"
DB=$(backing "$D/dmg")
"$DPFS" unmount "$MNT"
flip_bit "$DB" $((512 + 4136 + 100))
mount_device; unlock_device
check "the raise of a file with a damaged block succeeds" "$DPFS" protection set complete "$D/dmg"
check_error "that block still reads as EIO" "Input/output error" dd if="$D/dmg" bs=4096 skip=1 count=1 status=none of=/dev/null
expect_eq "the blocks around it read" "$(dd if="$D/dmg" bs=4096 count=1 status=none | cmp - "$WORK/dmg" -n 4096 && \
    dd if="$D/dmg" bs=4096 skip=2 status=none | cmp - <(tail -c +8193 "$WORK/dmg") && echo same)" "same"

# A lock during the raise of a large file does not wait for it: the move stops at the
# next chunk, and the first use of the key after the unlock finishes it. The raise is
# under way once its slot (class byte 0x81: complete, replacing the key) is on disk.
head -c 400000000 /dev/urandom > "$WORK/large"
cp "$WORK/large" "$D/large"; sync "$D/large"
touch -d "2001-02-03 04:05:06" "$D/large"
LB2=$(backing "$D/large")
slot_class() { od -A n -t x1 -j $((24 + 128 * $1 + 8)) -N 1 "$LB2" | tr -d ' '; }
"$DPFS" protection set complete "$D/large" 2> "$WORK/raise.err" &
raiser=$!
seen=no
for _ in $(seq 600); do
    if [ "$(slot_class 0)" = 81 ] || [ "$(slot_class 1)" = 81 ]; then seen=yes; break; fi
    kill -0 "$raiser" 2>/dev/null || break
    sleep 0.02
done
expect_eq "the raise is under way" "$seen" "yes"
check "lock --now during the raise" timeout 60 "$DPFS" lock "$MNT" --now
expect_eq "the device is locked" "$(state_of)" "locked"
wait "$raiser"; raised=$?; log "the raise ended with status $raised: $(cat "$WORK/raise.err")"
if [ "$raised" != 0 ]; then
    check "the stopped raise says the file has its new class and finishes after the unlock" \
        grep -q "has class complete now, but the device locked before its content moved" "$WORK/raise.err"
fi
check_error "the file is refused while locked" "Operation not permitted" cat "$D/large"
unlock_device
check "after the unlock it reads whole" cmp "$WORK/large" "$D/large"
if [ "$raised" != 0 ]; then
    check "daemon.log says the raise a lock cut short is finished" \
        grep -q "a class raise cut short (by a lock or a kill) is finished" "$DEV/daemon.log"
fi
expect_eq "with the raised class" "$("$DPFS" protection get "$D/large" | awk '{print $NF}')" "complete"
# The backing file's own time: what the daemon reports.
expect_eq "and its modification time, stopped and finished alike" "$(TZ=UTC stat -c %y "$LB2")" \
    "2001-02-03 04:05:06.000000000 +0000"
rm -f "$D/large" "$WORK/large"
"$DPFS" unmount "$MNT"

# Killed at each step of a raise (the debug build's kill points): 10 MiB files, three
# chunks of blocks each.
n=0
for step in raise-slot rekey-chunk raise-moved rekey-torn; do
    n=$((n + 1))
    # rekey-torn: the first chunk's write cut in half, as a kill mid-write leaves it.
    head -c 10485760 /dev/urandom > "$WORK/k$n"
    DPFS_TEST_KILL_AT=$step "$DEBUG" mount "$DEV" "$MNT" >/dev/null || { fail "$step: mount"; continue; }
    unlock_device >/dev/null
    cp "$WORK/k$n" "$D/k$n"; sync "$D/k$n"
    "$DPFS" protection set none "$D/k$n"
    header_of "$(backing "$D/k$n")" > "$WORK/k$n-old-header"
    "$DPFS" protection set complete "$D/k$n" 2>/dev/null
    died=no
    for _ in $(seq 300); do stat -f "$MNT" 2>&1 | grep -q "Transport endpoint is not connected" && { died=yes; break; }; sleep 0.1; done
    expect_eq "$step: the daemon died there" "$died" "yes"
done
report=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" 2>&1)
for i in 1 2 3 4; do
    case "$report" in *"Documents/k$i: a class raise was interrupted"*) pass "k$i: fsck names the interrupted raise" ;;
                      *) fail "k$i: fsck names the interrupted raise" "$(printf '%s' "$report" | grep "k$i")" ;; esac
    check_fails "k$i: fsck finds every block under one of the keys" \
        sh -c "printf '%s\n' \"\$1\" | grep -q '^Documents/k$i: .*damaged block'" _ "$report"
done
mount_device
check_error "before the unlock the raised files are refused" "Operation not permitted" cat "$D/k1"
unlock_device
for i in 1 2 3 4; do
    check "k$i reads whole after the raise is finished" cmp "$WORK/k$i" "$D/k$i"
    expect_eq "k$i has the raised class" "$("$DPFS" protection get "$D/k$i" | awk '{print $NF}')" "complete"
done
"$DPFS" unmount "$MNT"
report=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" 2>&1)
# Only the two files whose old headers were put back above, and the one damaged on
# purpose, are damaged.
expect_eq "fsck finds the raises finished" "$(printf '%s\n' "$report" | grep -c '^Documents/k')" "0"
expect_eq "and only the put-back headers damaged" "$(printf '%s\n' "$report" | grep '^Documents/' | cut -d: -f1 | sort | tr '\n' ' ')" \
    "Documents/big Documents/dmg Documents/h1.txt "
mount_device
B3=$(backing "$D/k3")
"$DPFS" unmount "$MNT"
put_header_back "$B3" "$WORK/k3-old-header"
mount_device
check_error "a finished raise leaves nothing the old header opens" "Input/output error" cat "$D/k3"
finish
