#!/usr/bin/env bash
# Scripts/install puts the binary, mount(8)'s helper, the man pages, the completions
# and the systemd user unit under a prefix (or a DESTDIR stage), and the helper makes
# `mount -t fuse.dpfs` and an fstab line mount a device with dpfs's options.
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
for file in bin/dpfs sbin/mount.fuse.dpfs sbin/dpfs-pam-unlock share/man/man1/dpfs.1 share/man/man5/dpfs.5 \
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

"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS" >/dev/null || { fail "init"; finish; }
check "the helper mounts, as mount(8) calls it" \
    "$WORK/prefix/sbin/mount.fuse.dpfs" "$DEV" "$MNT" -o rw,noauto,user,nofail,grace-period=0
expect_eq "with dpfs's grace-period option" \
    "$("$DPFS" status "$MNT" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["gracePeriod"])')" "0"
check "unmount" "$DPFS" unmount "$MNT"
check_error "the helper passes a usage error on" "usage" "$WORK/prefix/sbin/mount.fuse.dpfs" "$DEV"

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
