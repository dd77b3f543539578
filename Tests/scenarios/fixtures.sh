#!/usr/bin/env bash
# Issue 14: the frozen format-3 device (Tests/fixtures/v3.tar.gz, made once by
# Tests/fixtures/make-v3.sh) still mounts, unlocks and reads back exact bytes: one file
# per class and per cipher, a symlink, a directory class, one keychain item per
# accessibility. A format change that breaks this is a deliberate new version; the
# format-2 fixture (names in clear) is refused with one line. Format 3 has no name
# tags (issue 12): its first mount writes them and records format 4.
source "$(dirname "$0")/lib.sh"

FIXTURES="$(cd "$(dirname "$0")/.." && pwd)/fixtures"
BASE=/var/tmp/dpfs-fixture-v3   # the secret store path its keybag records
OLD=/var/tmp/dpfs-fixture-v2
scenario_cleanup() { rm -rf "$BASE" "$OLD"; }
unpack() {  # unpack VERSION DIR
    rm -rf "$2"; mkdir -p "$2"
    tar --xattrs --xattrs-include='user.*' -xzf "$FIXTURES/$1.tar.gz" -C "$2"
    chmod 700 "$2/secrets"; chmod 600 "$2/secrets"/* "$2/passcode"
}
unpack v2 "$OLD"
check_error "the format-2 fixture is refused with one line" "on-disk format version 2" "$DPFS" mount "$OLD/device" "$MNT"
unpack v3 "$BASE"
DEV="$BASE/device"
"$DPFS" mount "$DEV" "$MNT" >/dev/null || { fail "the fixture mounts"; finish; }
pass "the fixture mounts"
expect_eq "its first mount records format 4" "$(grep -c '"formatVersion" : 4' "$DEV/keybag.json")" "1"
check "it unlocks with its passcode" "$DPFS" unlock "$MNT" --passcode-file "$BASE/passcode"
aes=$(grep -qw aes /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo && echo yes || echo no)
while read -r sum name; do
    [ -n "$name" ] || continue
    case "$name" in *-xchacha.bin|vault/*|empty.bin) ;; *) [ "$aes" = yes ] || continue ;; esac
    expect_eq "$name reads back exactly" "$(sha256sum < "$MNT/Documents/$name" | cut -d' ' -f1)" "$sum"
done < <(grep -v '^\.\./' "$BASE/manifest")
for class in none complete completeUnlessOpen untilFirstAuth; do
    expect_eq "$class.bin has its class" "$(getfattr --only-values -n user.dpfs.protection "$MNT/Documents/$class.bin" 2>/dev/null)" "$class"
    expect_eq "$class-xchacha.bin is sealed with XChaCha20-Poly1305 (cipher 1)" \
        "$(od -An -tu1 -j6 -N1 "$(backing "$MNT/Documents/$class-xchacha.bin")" | tr -d ' ')" "1"
done
expect_eq "the vault directory keeps its class" "$(getfattr --only-values -n user.dpfs.protection "$MNT/Documents/vault" 2>/dev/null)" "complete"
expect_eq "the symlink keeps its target" "$(readlink "$MNT/Documents/link")" "$(grep '^\.\./' "$BASE/manifest")"
for accessible in WhenUnlocked AfterFirstUnlock Always WhenPasscodeSetThisDeviceOnly; do
    expect_eq "the $accessible keychain item reads back" \
        "$("$DPFS" keychain find "$MNT" --service fixture.example.com --account "$accessible" 2>&1)" "secret of $accessible"
done
"$DPFS" lock "$MNT" --now
check_error "locked, its complete file is refused" "Operation not permitted" cat "$MNT/Documents/complete.bin"
"$DPFS" unmount "$MNT"
out=$("$DPFS" fsck "$DEV" --passcode-file "$BASE/passcode" 2>&1); rc=$?
expect_eq "fsck finds the upgraded fixture clean, name tags included" "$rc" "0"
"$DPFS" mount "$DEV" "$MNT" >/dev/null && "$DPFS" unlock "$MNT" --passcode-file "$BASE/passcode"
swapped=$(backing "$MNT/Documents/untilFirstAuth.bin"); moved=$(backing "$MNT/Documents/none.bin")
"$DPFS" unmount "$MNT"
mv "$moved" "$swapped"
"$DPFS" mount "$DEV" "$MNT" >/dev/null && "$DPFS" unlock "$MNT" --passcode-file "$BASE/passcode"
check_error "after the upgrade, a file moved onto another's name reads as EIO" "Input/output error" \
    cat "$MNT/Documents/untilFirstAuth.bin"
"$DPFS" unmount "$MNT"
sed -i 's/"formatVersion" : 4/"formatVersion" : 1/' "$DEV/keybag.json"
check_error "a device of format version 1 is refused with one line" "on-disk format version 1" "$DPFS" mount "$DEV" "$MNT"
finish
