#!/usr/bin/env bash
# Scripts/install puts the binary, mount(8)'s helper, the man pages, the completions
# and the systemd user unit under a prefix (or a DESTDIR stage); Scripts/package-deb
# makes a Debian package whose binary runs without the Swift toolchain; and the helper
# makes `mount -t fuse.dpfs` and an fstab line mount a device with dpfs's options.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LINKED=""
scenario_cleanup() { [ -n "$LINKED" ] && rm -f "$LINKED"; }

# Installs the binary under test (the suite's), not whatever .build holds.
stage_binary() { mkdir -p "$WORK/tree/.build/release"; cp "$DPFS" "$WORK/tree/.build/release/dpfs"; }
mkdir -p "$WORK/tree"
cp -r "$ROOT/Scripts" "$ROOT/man" "$WORK/tree/"
stage_binary

check "install into a DESTDIR stage" env DESTDIR="$WORK/stage" "$WORK/tree/Scripts/install" /usr
for file in bin/dpfs bin/dpfs-desktop-setup sbin/mount.fuse.dpfs sbin/dpfs-pam-unlock share/man/man1/dpfs.1 share/man/man5/dpfs.5 \
            share/bash-completion/completions/dpfs share/zsh/site-functions/_dpfs \
            share/fish/vendor_completions.d/dpfs.fish lib/systemd/user/dpfs@.service; do
    [ -s "$WORK/stage/usr/$file" ] && pass "installs $file" || fail "installs $file"
done
check "the bash completion is valid bash" bash -n "$WORK/stage/usr/share/bash-completion/completions/dpfs"
check "the bash completion knows the subcommands" grep -q "unlock" "$WORK/stage/usr/share/bash-completion/completions/dpfs"
check "the unit runs the installed binary" grep -q "^ExecStart=/usr/bin/dpfs mount" "$WORK/stage/usr/lib/systemd/user/dpfs@.service"
check "the man pages pass mandoc's lint" mandoc -Tlint -Wwarning "$WORK/stage/usr/share/man/man1/dpfs.1" "$WORK/stage/usr/share/man/man5/dpfs.5"

check "install under a prefix" "$WORK/tree/Scripts/install" "$WORK/prefix"
expect_eq "the installed dpfs runs" "$("$WORK/prefix/bin/dpfs" --version)" "$("$DPFS" --version)"

# The Debian package: built from the tree, and its binary runs where no Swift toolchain is.
if command -v dpkg-deb >/dev/null; then
    deb=$("$WORK/tree/Scripts/package-deb" "$WORK/deb" 2>&1 | tail -1)
    check "Scripts/package-deb builds a package" test -s "$deb"
    info=$(dpkg-deb --info "$deb" 2>&1)
    expect_eq "its version is the binary's" "$(printf '%s\n' "$info" | sed -n 's/^ Version: //p')" "$("$DPFS" --version)"
    for package in fuse3 libfuse3-3 libsodium23; do
        case "$info" in *"Depends:"*"$package"*) pass "it depends on $package" ;; *) fail "it depends on $package" "$info" ;; esac
    done
    dpkg-deb -x "$deb" "$WORK/deb/root" || fail "dpkg-deb -x"
    for file in usr/bin/dpfs usr/lib/dpfs/libswiftCore.so usr/sbin/mount.fuse.dpfs usr/share/man/man1/dpfs.1 \
                usr/lib/systemd/user/dpfs@.service; do
        [ -e "$WORK/deb/root/$file" ] && pass "the package holds /$file" || fail "the package holds /$file"
    done
    # With the toolchain hidden (a tmpfs over it, in a mount namespace of its own that
    # goes with the script): a device made, mounted, unlocked, written, locked, unmounted.
    cat > "$WORK/without-toolchain.sh" <<'SCRIPT'
set -u
bin=$1; dev=$2; mnt=$3; pass=$4; secrets=$5
trap '"$bin" unmount "$mnt" >/dev/null 2>&1' EXIT
mount -t tmpfs none "$(dirname "$(dirname "$(dirname "$(command -v swift || echo /opt/swift/usr/bin/swift)")")")" || exit 1
command -v swift >/dev/null && echo "toolchain still there" && exit 1
"$bin" init "$dev" --passcode-file "$pass" --secret-store "file:$secrets" --create --default-protection complete >/dev/null || exit 2
"$bin" mount "$dev" "$mnt" --grace-period 0 >/dev/null || exit 3
"$bin" unlock "$mnt" --passcode-file "$pass" >/dev/null || exit 4
echo packaged > "$mnt/Documents/a.txt" && [ "$(cat "$mnt/Documents/a.txt")" = packaged ] || exit 5
"$bin" lock "$mnt" --now >/dev/null || exit 6
cat "$mnt/Documents/a.txt" >/dev/null 2>&1 && exit 7
"$bin" unmount "$mnt" || exit 8
echo "all done"
SCRIPT
    out=$(PATH=/opt/swift/usr/bin:$PATH unshare --mount --propagation private bash "$WORK/without-toolchain.sh" \
        "$WORK/deb/root/usr/bin/dpfs" "$WORK/deb-device" "$MNT" "$PASS" "$WORK/deb-secrets" 2>&1)
    expect_eq "without the Swift toolchain, the packaged dpfs makes, mounts, locks and unmounts a device" \
        "$(printf '%s' "$out" | tail -1)" "all done"
else
    fail "dpkg-deb is missing (Debian's dpkg)"
fi

"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS" >/dev/null || { fail "init"; finish; }
check "the helper mounts, as mount(8) calls it" \
    "$WORK/prefix/sbin/mount.fuse.dpfs" "$DEV" "$MNT" \
    -o rw,noauto,user,nofail,grace-period=0,user-inactive-period=48,inactivity-reboot=72,log-level=debug
status_field() { "$DPFS" status "$MNT" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
expect_eq "with dpfs's grace-period option" "$(status_field gracePeriod)" "0"
expect_eq "and user-inactive-period" "$(status_field userInactivePeriodHours)" "48"
expect_eq "and inactivity-reboot" "$(status_field inactivityRebootHours)" "72"
check "unmount" "$DPFS" unmount "$MNT"
check_error "the helper passes a usage error on" "usage" "$WORK/prefix/sbin/mount.fuse.dpfs" "$DEV"
check_error "an fstab option misspelt (grace_period=): named, with dpfs's spelling" \
    "unknown mount option 'grace_period=30'; dpfs's own option is --grace-period 30 .*, grace-period=30 in a mount -o list" \
    "$WORK/prefix/sbin/mount.fuse.dpfs" "$DEV" "$MNT" -o rw,noauto,user,grace_period=30

# mount(8) finds helpers in /sbin: linked there for the test, unless one is there already.
if [ ! -e /sbin/mount.fuse.dpfs ] && [ -w /sbin ]; then
    ln -s "$WORK/prefix/sbin/mount.fuse.dpfs" /sbin/mount.fuse.dpfs && LINKED=/sbin/mount.fuse.dpfs
fi
if [ -n "$LINKED" ]; then
    check "mount -t fuse.dpfs" mount -t fuse.dpfs "$DEV" "$MNT" -o grace-period=1
    check "is a dpfs mount" "$DPFS" status "$MNT"
    check "unmount" "$DPFS" unmount "$MNT"
    printf '%s %s fuse.dpfs noauto,user,grace-period=2 0 0\n' "$DEV" "$MNT" > "$WORK/fstab"
    check "an fstab line mounts it" mount -T "$WORK/fstab" "$MNT"
    expect_eq "with its options" \
        "$("$DPFS" status "$MNT" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["gracePeriod"])')" "2"
    check "unmount" "$DPFS" unmount "$MNT"
else
    log "skipped mount -t and fstab: /sbin/mount.fuse.dpfs exists already or /sbin is read-only"
fi

finish
