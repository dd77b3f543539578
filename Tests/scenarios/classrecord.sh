#!/usr/bin/env bash
# A directory whose class record is damaged keeps its names: its ID, which they are
# sealed under, is recovered from the record's bytes when the device's keys prove it.
# fsck reports the record and salvages the files below it, the mount lists them, and
# setting the directory's class again (unlocked) mends the record with every entry
# kept. A directory whose ID is lost has its files salvaged under their stored names,
# and is refused a new class while it holds entries.
source "$(dirname "$0")/lib.sh"

# flip_record_bit DIR BYTE: inverts the lowest bit of byte BYTE of DIR's class record.
flip_record_bit() {
    local hex
    hex=$(getfattr --absolute-names -e hex -n user.dpfs.protection "$1" | sed -n 's/^user.dpfs.protection=//p')
    setfattr -n user.dpfs.protection -v "$(python3 -c 'import sys; b=bytearray.fromhex(sys.argv[1][2:]); b[int(sys.argv[2])]^=1; print("0x"+b.hex())' "$hex" "$2")" "$1"
}

setup_device
unlock_device
D="$MNT/Documents"
echo "precious work" > "$D/a.txt"
mkdir "$D/deep"
echo "deeper work" > "$D/deep/b.txt"
DOCS=$(backing "$D")
"$DPFS" unmount "$MNT" || fail "unmount"
entries=$(ls -A "$DOCS" | wc -l)

# Bytes of the record: its class (0), its ID (1-16), its MAC (17-).
for byte in 0 5 20; do
    flip_record_bit "$DOCS" "$byte"
    out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" --salvage "$WORK/salvage$byte" 2>&1); rc=$?
    expect_eq "byte $byte: fsck reports the damaged record (exit 1)" "$rc" "1"
    case "$out" in *"Documents: directory class record damaged"*"ID was recovered"*) pass "byte $byte: fsck names the record and recovers the ID" ;;
        *) fail "byte $byte: fsck names the record and recovers the ID" "$out" ;; esac
    expect_eq "byte $byte: a.txt is salvaged" "$(cat "$WORK/salvage$byte/Documents/a.txt" 2>&1)" "precious work"
    expect_eq "byte $byte: the subtree is salvaged" "$(cat "$WORK/salvage$byte/Documents/deep/b.txt" 2>&1)" "deeper work"
    mount_device
    unlock_device
    expect_eq "byte $byte: the mount still lists the directory" "$(ls "$D" 2>&1 | tr '\n' ' ')" "a.txt deep "
    check_error "byte $byte: no file is created under the damaged record" "Input/output error" sh -c "echo x > '$D/new.txt'"
    check "byte $byte: unlocked, the class is set again" setfattr -n user.dpfs.protection -v untilFirstAuth "$D"
    expect_eq "byte $byte: a.txt still opens" "$(cat "$D/a.txt" 2>&1)" "precious work"
    expect_eq "byte $byte: and the subtree" "$(cat "$D/deep/b.txt" 2>&1)" "deeper work"
    check "byte $byte: files are created again" sh -c "echo x > '$D/new.txt' && rm '$D/new.txt'"
    "$DPFS" unmount "$MNT" || fail "unmount"
    check "byte $byte: the mended device is clean" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
done

# An ID damaged past recovery: every byte of the record changed.
hex=$(getfattr --absolute-names -e hex -n user.dpfs.protection "$DOCS" | sed -n 's/^user.dpfs.protection=//p')
setfattr -n user.dpfs.protection -v "$(python3 -c 'import sys; print("0x"+bytes(b^0x5a for b in bytes.fromhex(sys.argv[1][2:])).hex())' "$hex")" "$DOCS"
out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" --salvage "$WORK/salvagelost" 2>&1); rc=$?
expect_eq "lost ID: fsck exits 1" "$rc" "1"
case "$out" in *"ID cannot be recovered"*) pass "lost ID: fsck says so" ;; *) fail "lost ID: fsck says so" "$out" ;; esac
expect_eq "lost ID: a.txt is salvaged under its stored name" \
    "$(find "$WORK/salvagelost/Documents" -maxdepth 1 -type f -exec cat {} + 2>&1)" "precious work"
expect_eq "lost ID: the subtree is salvaged with its own names" \
    "$(cat "$WORK"/salvagelost/Documents/*/b.txt 2>&1)" "deeper work"
mount_device
unlock_device
check_error "lost ID: a new class, which would lose the entries' names, is refused" "Input/output error" \
    setfattr -n user.dpfs.protection -v untilFirstAuth "$D"
expect_eq "lost ID: every backing entry is kept" "$(ls -A "$DOCS" | wc -l)" "$entries"
"$DPFS" unmount "$MNT" || fail "unmount"
finish
