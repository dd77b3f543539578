#!/usr/bin/env bash
# A device on which no POSIX ACL was ever set (ACLPresence.swift): a root-only mount
# answers ACL reads as a filesystem without ACLs (EOPNOTSUPP), so ls -l asks once per
# listing instead of once per file; the tools that read ACLs treat that as none. A mode-
# only ACL (cp -a, tar --acls) keeps the device ACL-free; the first real ACL ends it
# for good, durably, and is then read back like any other. A mount where the kernel
# checks permissions answers "no ACL" (ENODATA) meanwhile.
source "$(dirname "$0")/lib.sh"

require_tools setfacl getfacl strace python3
acl_errno() {  # the errno name of reading system.posix_acl_access of $1, or "data"
    python3 - "$1" <<'EOF'
import errno, os, sys
try:
    os.getxattr(sys.argv[1], "system.posix_acl_access")
    print("data")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
EOF
}
MARKER="$DEV/no-acls"

MOUNT_ARGS="-o allow_other" setup_device
unlock_device
S="$MNT/Documents"
check "init marks a new device ACL-free" test -f "$MARKER"
echo x > "$S/checked"
expect_eq "with kernel permission checks: a file has no ACL (ENODATA)" "$(acl_errno "$S/checked")" "ENODATA"
check "unmount" "$DPFS" unmount "$MNT"

MOUNT_ARGS="" mount_device
unlock_device
mkdir -p "$S/tree/a/b"
for f in one two a/three a/b/four; do echo x > "$S/tree/$f"; done
expect_eq "root-only: a file answers as a filesystem without ACLs" "$(acl_errno "$S/tree/one")" "ENOTSUP"
asked=$(strace -f -e trace=getxattr ls -lR "$S/tree" 2>&1 >/dev/null | grep -c '"system.posix_acl_access"')
expect_eq "ls -lR asks for an ACL once, not once per file" "$asked" "1"
expect_eq "getfacl shows the mode" "$(getfacl -cp "$S/tree/one" 2>/dev/null | grep . | tr '\n' ' ')" "user::rw- group::r-- other::r-- "
echo y > "$WORK/source"; chmod 640 "$WORK/source"
check "cp -a into the mount (it sets a mode-only ACL)" cp -a "$WORK/source" "$S/copied"
expect_eq "keeps the mode" "$(stat -c %a "$S/copied")" "640"
check "tar --acls into the mount" tar --acls -cf "$WORK/t.tar" -C "$WORK" source
check "extracts" tar --acls -xf "$WORK/t.tar" -C "$S/tree"
check "neither ends the ACL-free state" test -f "$MARKER"

# An ACL set in the backing tree, past the mount, would be hidden by the marker: fsck
# names the node.
TWO=$(backing "$S/tree/two")
"$DPFS" unmount "$MNT"
expect_eq "fsck: the ACL-free device is clean" "$("$DPFS" fsck "$DEV" --passcode-file "$PASS" >/dev/null; echo $?)" "0"
setfacl -m u:1001:r "$TWO"
out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS"); rc=$?
expect_eq "fsck: an ACL set past the mount is damage (exit 1)" "$rc" "1"
case "$out" in *"Documents/tree/two: holds a POSIX ACL, but the device's no-acls marker"*) pass "fsck names the node and the marker" ;;
    *) fail "fsck names the node and the marker" "$out" ;; esac
setfacl -b "$TWO"
expect_eq "fsck: a mode-only ACL is no ACL" "$("$DPFS" fsck "$DEV" --passcode-file "$PASS" >/dev/null; echo $?)" "0"
MOUNT_ARGS="" mount_device
unlock_device
check "setfacl -m on an ACL-free device" setfacl -m u:1001:r "$S/tree/one"
check_fails "the first ACL removed the marker" test -e "$MARKER"
expect_eq "getfacl reads the entry back" "$(getfacl -cp "$S/tree/one" 2>/dev/null | grep -c '^user:1001:r--')" "1"
expect_eq "ls -l marks it" "$(ls -l "$S/tree/one" | cut -c11)" "+"
expect_eq "a file without one now answers ENODATA" "$(acl_errno "$S/tree/two")" "ENODATA"
setfacl -b "$S/tree/one"
check_fails "removing the ACL does not bring the marker back" test -e "$MARKER"
check "unmount" "$DPFS" unmount "$MNT"
MOUNT_ARGS="" mount_device
unlock_device
setfacl -m u:1001:r "$S/tree/two"
check "unmount" "$DPFS" unmount "$MNT"
MOUNT_ARGS="" mount_device
unlock_device
expect_eq "after a remount the ACL is still read" "$(getfacl -cp "$S/tree/two" 2>/dev/null | grep -c '^user:1001:r--')" "1"

# A default ACL counts too, and a device whose marker is gone stays as it is.
"$DPFS" unmount "$MNT"
rm -rf "$DEV" "$SECRETS"
MOUNT_ARGS="" setup_device
unlock_device
mkdir "$S/inherit"
check "setfacl -d on an ACL-free device" setfacl -d -m u:1001:rwx "$S/inherit"
check_fails "a default ACL removes the marker" test -e "$MARKER"
(umask 077; echo x > "$S/inherit/file")
expect_eq "and is inherited" "$(getfacl -cp "$S/inherit/file" 2>/dev/null | grep -c '^user:1001:rwx')" "1"
finish
