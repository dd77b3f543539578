#!/usr/bin/env bash
# Issue 14: the frozen devices of each format this dpfs reads (Tests/fixtures/vN.tar.gz,
# made once by Tests/fixtures/make-fixture.sh N) still mount, unlock and read back
# exact bytes: one file per class and per cipher, a symlink, a directory class, one
# keychain item per accessibility, a hard link. A format change that breaks this is a
# deliberate new version. Older formats are refused with one line naming the version:
# 2 (names in clear), 3 (no name tags) and 4 (a keychain without key items).
source "$(dirname "$0")/lib.sh"

FIXTURES="$(cd "$(dirname "$0")/.." && pwd)/fixtures"
OLD=/var/tmp/dpfs-fixture-v2
scenario_cleanup() { rm -rf /var/tmp/dpfs-fixture-v2 /var/tmp/dpfs-fixture-v3 /var/tmp/dpfs-fixture-v4 /var/tmp/dpfs-fixture-v5; }
unpack() {  # unpack VERSION DIR (the secret store path its keybag records)
    rm -rf "$2"; mkdir -p "$2"
    tar --xattrs --xattrs-include='user.*' -xzf "$FIXTURES/$1.tar.gz" -C "$2"
    chmod 700 "$2/secrets"; chmod 600 "$2/secrets"/* "$2/passcode"
}
for old in 2 3 4; do
    unpack "v$old" "/var/tmp/dpfs-fixture-v$old"
    check_error "the format-$old fixture is refused with one line" "on-disk format version $old" \
        "$DPFS" mount "/var/tmp/dpfs-fixture-v$old/device" "$MNT"
done
check_fails "and nothing was mounted" grep -qs " $MNT fuse" /proc/mounts

aes=$(grep -qw aes /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo && echo yes || echo no)
check_fixture() {  # check_fixture VERSION
    local v=$1 base=/var/tmp/dpfs-fixture-$1 dev sum name class accessible out rc
    unpack "$v" "$base"
    dev="$base/device"; DEV=$dev   # where lib.sh's backing() looks
    "$DPFS" mount "$dev" "$MNT" >/dev/null || { fail "$v: the fixture mounts"; return; }
    pass "$v: the fixture mounts"
    expect_eq "$v: its keybag records format 5" "$(grep -c '"formatVersion" : 5' "$dev/keybag.json")" "1"
    check "$v: it unlocks with its passcode" "$DPFS" unlock "$MNT" --passcode-file "$base/passcode"
    expect_eq "$v: the keybag holds the completeWhenUserInactive key" "$(grep -c '"completeWhenUserInactive"' "$dev/keybag.json")" "1"
    check "$v: a file of that class can be made" sh -c "echo new > '$MNT/Documents/inactive.txt' && setfattr -n user.dpfs.protection -v completeWhenUserInactive '$MNT/Documents/inactive.txt' && grep -q new '$MNT/Documents/inactive.txt'"
    while read -r sum name; do
        [ -n "$name" ] || continue
        case "$name" in *-xchacha.bin|vault/*|empty.bin) ;; *) [ "$aes" = yes ] || continue ;; esac
        expect_eq "$v: $name reads back exactly" "$(sha256sum < "$MNT/Documents/$name" | cut -d' ' -f1)" "$sum"
    done < <(grep -v '^\.\./' "$base/manifest")
    for class in none complete completeUnlessOpen untilFirstAuth; do
        expect_eq "$v: $class.bin has its class" "$(getfattr --only-values -n user.dpfs.protection "$MNT/Documents/$class.bin" 2>/dev/null)" "$class"
        expect_eq "$v: $class-xchacha.bin is sealed with XChaCha20-Poly1305 (cipher 1)" \
            "$(od -An -tu1 -j6 -N1 "$(backing "$MNT/Documents/$class-xchacha.bin")" | tr -d ' ')" "1"
    done
    expect_eq "$v: the vault directory keeps its class" "$(getfattr --only-values -n user.dpfs.protection "$MNT/Documents/vault" 2>/dev/null)" "complete"
    expect_eq "$v: the symlink keeps its target" "$(readlink "$MNT/Documents/link")" "$(grep '^\.\./' "$base/manifest")"
    for accessible in WhenUnlocked AfterFirstUnlock Always WhenPasscodeSetThisDeviceOnly; do
        expect_eq "$v: the $accessible keychain item reads back" \
            "$("$DPFS" keychain find "$MNT" --service fixture.example.com --account "$accessible" 2>&1)" "secret of $accessible"
    done
    "$DPFS" lock "$MNT" --now
    check_error "$v: locked, its complete file is refused" "Operation not permitted" cat "$MNT/Documents/complete.bin"
    "$DPFS" unmount "$MNT"
    out=$("$DPFS" fsck "$dev" --passcode-file "$base/passcode" 2>&1); rc=$?
    expect_eq "$v: fsck finds it clean, name tags included" "$rc" "0"
    # Its name tags hold: a file moved onto another's name reads as EIO.
    "$DPFS" mount "$dev" "$MNT" >/dev/null && "$DPFS" unlock "$MNT" --passcode-file "$base/passcode"
    local swapped moved
    swapped=$(backing "$MNT/Documents/untilFirstAuth.bin"); moved=$(backing "$MNT/Documents/complete-xchacha.bin")
    "$DPFS" unmount "$MNT"
    mv "$moved" "$swapped"
    "$DPFS" mount "$dev" "$MNT" >/dev/null && "$DPFS" unlock "$MNT" --passcode-file "$base/passcode"
    check_error "$v: a file moved onto another's name reads as EIO" "Input/output error" cat "$MNT/Documents/untilFirstAuth.bin"
    "$DPFS" unmount "$MNT"
}
check_fixture v5

DEV=/var/tmp/dpfs-fixture-v5/device
sed -i 's/"formatVersion" : 5/"formatVersion" : 1/' "$DEV/keybag.json"
check_error "a device of format version 1 is refused with one line" "on-disk format version 1" "$DPFS" mount "$DEV" "$MNT"
finish
