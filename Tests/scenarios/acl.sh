#!/usr/bin/env bash
# POSIX ACLs set with setfacl are enforced through the mount as on ext4, for
# other users (-o allow_other): a named-user entry denies what the mode would allow
# and grants what it would not; the mask and chmod stay in sync; a default ACL is
# inherited by new files and directories (the umask ignored, as on ext4); getfacl,
# setfacl, cp -a and rsync -aAX round-trip. Security labels dpfs does not keep
# (security.selinux, SMACK) answer "Operation not supported", so ls -l asks once per
# mount, not once per file; security.capability works as before.
source "$(dirname "$0")/lib.sh"

require_tools setfacl getfacl setpriv getfattr setfattr rsync strace
MOUNT_ARGS="-o allow_other" setup_device
unlock_device
S="$MNT/Documents/acl"
L="$WORK/local"   # the same operations on the backing disk (ext4): the reference
mkdir "$S" "$L"
chmod 755 "$WORK" "$MNT" "$S" "$L"
as() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }
acl() { getfacl --omit-header --absolute-names "$1" 2>&1; }

# Denied by an ACL although the mode allows.
echo secret > "$S/deny"; chmod 644 "$S/deny"
check "uid 1002 reads a 0644 file" as 1002 cat "$S/deny"
check "setfacl u:1001:--- on it" setfacl -m u:1001:--- "$S/deny"
expect_eq "the mode still says 0644" "$(stat -c %a "$S/deny")" "644"
check_error "uid 1001 is denied by the ACL" "Permission denied" as 1001 cat "$S/deny"
check "uid 1002 still reads it" as 1002 cat "$S/deny"
# The kernel keeps the ACL it enforced: removing the entry must reach it.
check "setfacl -x u:1001" setfacl -x u:1001 "$S/deny"
check "then uid 1001 reads it (the kernel's cached ACL was dropped)" as 1001 cat "$S/deny"

# Granted by an ACL although the mode does not.
echo shared > "$S/grant"; chmod 600 "$S/grant"
check_error "uid 1001 cannot read a 0600 file" "Permission denied" as 1001 cat "$S/grant"
check "setfacl u:1001:r" setfacl -m u:1001:r "$S/grant"
expect_eq "the mode shows the mask in the group bits, as on ext4" "$(stat -c %a "$S/grant")" "640"
expect_eq "uid 1001 reads it through the ACL" "$(as 1001 cat "$S/grant" 2>&1)" "shared"
check_error "but may not write it" "Permission denied" as 1001 sh -c "echo x >> '$S/grant'"
check_error "uid 1002 still cannot read it" "Permission denied" as 1002 cat "$S/grant"
check "a group entry: setfacl g:1003:rw" setfacl -m g:1003:rw "$S/grant"
check "uid 1003 (that group) writes it" as 1003 sh -c "echo more >> '$S/grant'"
check "chmod 600 (the mask becomes ---)" chmod 600 "$S/grant"
expect_eq "getfacl shows the mask chmod set" "$(acl "$S/grant" | grep '^mask')" "mask::---"
check_error "uid 1001 loses its access with the mask" "Permission denied" as 1001 cat "$S/grant"
check "setfacl -m m::r" setfacl -m m::r "$S/grant"
expect_eq "the mode follows the mask" "$(stat -c %a "$S/grant")" "640"
check "uid 1001 reads again" as 1001 cat "$S/grant"
expect_eq "ls -l marks the file with an ACL" "$(ls -l "$S/grant" | cut -c11)" "+"

# A directory's ACL: search and write granted to one user only.
mkdir "$S/box"; chmod 700 "$S/box"
check "setfacl u:1001:rwx on a 0700 directory" setfacl -m u:1001:rwx "$S/box"
check "uid 1001 lists it" as 1001 ls "$S/box"
check "uid 1001 creates a file in it" as 1001 touch "$S/box/mine"
expect_eq "which belongs to 1001" "$(stat -c %u "$S/box/mine")" "1001"
check_error "uid 1002 cannot list it" "Permission denied" as 1002 ls "$S/box"

# Default ACLs are inherited, and the umask yields to them, exactly as on ext4.
for d in "$S" "$L"; do
    mkdir "$d/inherit"
    setfacl -m u:1001:rwx "$d/inherit"
    setfacl -d -m u:1001:rwx,g:1003:rx "$d/inherit"
    (umask 077; echo x > "$d/inherit/file"; mkdir "$d/inherit/sub"; mknod "$d/inherit/fifo" p)
    (umask 027; echo x > "$d/plain"; mkdir "$d/plaindir")
done
for name in inherit/file inherit/sub inherit/fifo plain plaindir; do
    expect_eq "$name: mode as on ext4" "$(stat -c %A "$S/$name")" "$(stat -c %A "$L/$name")"
    expect_eq "$name: ACL as on ext4" "$(acl "$S/$name")" "$(acl "$L/$name")"
done
expect_eq "the new file has the inherited entry" "$(acl "$S/inherit/file" | grep -c '^user:1001:rwx')" "1"
expect_eq "the new directory has the default ACL too" "$(acl "$S/inherit/sub" | grep -c '^default:user:1001:rwx')" "1"
check "uid 1001 writes the inherited file" as 1001 sh -c "echo y >> '$S/inherit/file'"
check "uid 1001 creates in the inherited directory" as 1001 touch "$S/inherit/sub/f"
check_error "uid 1002 cannot" "Permission denied" as 1002 touch "$S/inherit/sub/g"

# Round trips: getfacl | setfacl, cp -a, rsync -aAX, in and out of the mount.
touch "$S/copy"
check "getfacl | setfacl --set-file" sh -c "getfacl '$S/grant' | setfacl --set-file=- '$S/copy'"
expect_eq "the ACL arrived whole" "$(acl "$S/copy")" "$(acl "$S/grant")"
check "setfacl -b removes it" setfacl -b "$S/copy"
expect_eq "getfacl shows none" "$(acl "$S/copy" | grep -c ':1001:')" "0"
check "cp -a within the mount" cp -a "$S/grant" "$S/grant.cp"
expect_eq "cp -a keeps the ACL" "$(acl "$S/grant.cp")" "$(acl "$S/grant")"
check "cp -a of a tree out of the mount" cp -a "$S/inherit" "$L/out.cp"
expect_eq "the tree's ACLs arrive" "$(acl "$L/out.cp/sub")" "$(acl "$S/inherit/sub")"
check "cp -a of a tree into the mount" cp -a "$L/inherit" "$S/in.cp"
expect_eq "and come back" "$(acl "$S/in.cp/file")" "$(acl "$L/inherit/file")"
check "rsync -aHAX into the mount" rsync -aHAX "$L/inherit/" "$S/in.rsync/"
expect_eq "rsync -aHAX keeps a default ACL" "$(acl "$S/in.rsync/sub")" "$(acl "$L/inherit/sub")"
expect_eq "and a file's ACL" "$(acl "$S/in.rsync/file")" "$(acl "$L/inherit/file")"
check "rsync -aAX out of the mount" rsync -aAX "$S/inherit/" "$L/out.rsync/"
expect_eq "keeps them" "$(acl "$L/out.rsync/file")" "$(acl "$S/inherit/file")"
# rsync -X alone carries no ACLs between two ext4 directories either: the same here.
rsync -aX "$L/inherit/" "$L/x.rsync/"
check "rsync -aX into the mount" rsync -aX "$L/inherit/" "$S/x.rsync/"
expect_eq "rsync -aX: the file's ACL as ext4 to ext4 gives" "$(acl "$S/x.rsync/file")" "$(acl "$L/x.rsync/file")"

# Security labels: not kept. A label already on the backing node stays invisible.
echo x > "$S/label"
B=$(backing "$S/label")
check "a label set on the backing node (the reference)" setfattr -n security.selinux -v system_u:object_r:x_t "$B"
check_error "getfattr security.selinux: not supported" "Operation not supported" getfattr -n security.selinux "$S/label"
check_error "setfattr security.selinux: not supported" "Operation not supported" setfattr -n security.selinux -v x "$S/label"
check_error "setfattr security.SMACK64: not supported" "Operation not supported" setfattr -n security.SMACK64 -v x "$S/label"
check_error "setfattr security.apparmor: not supported" "Operation not supported" setfattr -n security.apparmor -v x "$S/label"
expect_eq "the list leaves the label out" "$(getfattr -d -m - "$S/label" 2>/dev/null | grep -c 'security.selinux')" "0"
expect_eq "the backing label is untouched" "$(getfattr --only-values -n security.selinux "$B" 2>/dev/null)" "system_u:object_r:x_t"
# A tree from a host with SELinux labels: rsync reports each label it cannot set
# (exit 23, as into NFS or vfat); excluding them copies everything else.
echo x > "$L/labelled"; setfattr -n security.selinux -v system_u:object_r:x_t "$L/labelled"
setfattr -n user.note -v kept "$L/labelled"; setfacl -m u:1001:r "$L/labelled"
check_fails "rsync -aX of a labelled file reports the label" rsync -aX "$L/labelled" "$S/labelled.rsync"
check "rsync -aHAX --filter='-x security.selinux' copies it" \
    rsync -aHAX --filter='-x security.selinux' "$L/labelled" "$S/labelled.filtered"
expect_eq "with its user attribute" "$(getfattr --only-values -n user.note "$S/labelled.filtered" 2>/dev/null)" "kept"
expect_eq "and its ACL" "$(acl "$S/labelled.filtered")" "$(acl "$L/labelled")"
calls=$(strace -f -e trace=lgetxattr,getxattr ls -l "$S" 2>&1 >/dev/null | grep -c '"security.selinux"')
expect_eq "ls -l asks security.selinux once for the whole directory" "$calls" "1"
if command -v setcap >/dev/null; then
    check "setcap still works" setcap cap_net_raw+ep "$S/label"
    expect_eq "getcap reads it back" "$(getcap "$S/label" | grep -c cap_net_raw)" "1"
    check "setcap -r removes it" setcap -r "$S/label"
    expect_eq "getcap shows none" "$(getcap "$S/label")" ""
else
    check "security.capability can be set" setfattr -n security.capability -v 0sAQAAAgAgAAAAAAAAAAAAAAAAAAA= "$S/label"
    expect_eq "and read back" "$(getfattr --only-values -e base64 -n security.capability "$S/label" 2>/dev/null)" "0sAQAAAgAgAAAAAAAAAAAAAAAAAAA="
fi

# A root mount only root reaches: no kernel checks (they would cost a GETATTR per
# create), but ACLs are kept and inherited as on ext4 all the same.
check "unmount" "$DPFS" unmount "$MNT"
MOUNT_ARGS="" mount_device
unlock_device
expect_eq "a root-only mount has no default_permissions" \
    "$(findmnt -no OPTIONS "$MNT" | tr , '\n' | grep -cx default_permissions)" "0"
for d in "$S" "$L"; do
    mkdir "$d/rootonly"
    setfacl -d -m u:1001:rwx "$d/rootonly"
    (umask 077; echo x > "$d/rootonly/file"; mkdir "$d/rootonly/sub")
    (umask 027; echo x > "$d/rootonly.plain")
done
for name in rootonly/file rootonly/sub rootonly.plain; do
    expect_eq "root-only $name: mode as on ext4" "$(stat -c %A "$S/$name")" "$(stat -c %A "$L/$name")"
    expect_eq "root-only $name: ACL as on ext4" "$(acl "$S/$name")" "$(acl "$L/$name")"
done
expect_eq "ACLs set before the remount are still there" "$(acl "$S/grant")" "$(acl "$S/grant.cp")"

# The daemon remembers which ACLs and capabilities a node lacks (AbsentAttributes.swift),
# so each is asked for first (absent), then set, then asked for again.
entries() { getfacl -cp "$1" 2>/dev/null | grep -c "^$2:1001"; }
(umask 022; echo x > "$S/later"); mkdir "$S/laterdir"
expect_eq "a new file has no ACL" "$(entries "$S/later" user)" "0"
setfacl -m u:1001:r "$S/later"
expect_eq "an ACL set after that shows" "$(entries "$S/later" user)" "1"
setfacl -b "$S/later"
expect_eq "and is gone once removed" "$(entries "$S/later" user)" "0"
(umask 022; echo x > "$S/laterdir/before")
setfacl -d -m u:1001:rwx "$S/laterdir"
(umask 022; echo x > "$S/laterdir/after")
expect_eq "a file made before the directory had a default ACL has none" "$(entries "$S/laterdir/before" user)" "0"
expect_eq "a file made after inherits it" "$(entries "$S/laterdir/after" user)" "1"
# A tree extracted here (tar keeps modes: no umask to apply, so no question asked of
# the directory on the way) is known bare where no default ACL is passed on: listing it
# costs the daemon no getxattr system call. Where one is passed on, it shows.
mkdir -p "$WORK/tree/dir/sub"; for f in a b c dir/d dir/sub/e; do echo x > "$WORK/tree/$f"; done
tar cf "$WORK/tree.tar" -C "$WORK" tree
mkdir "$S/extracted" "$S/extracted.acl"
setfacl -d -m u:1001:rwx "$S/extracted.acl"
(umask 022; tar xf "$WORK/tree.tar" -C "$S/extracted"; tar xf "$WORK/tree.tar" -C "$S/extracted.acl")
daemon=$(daemon_pid)
strace -f -qq -p "$daemon" -e trace=getxattr,lgetxattr,fgetxattr -o "$WORK/daemon.strace" 2>/dev/null &
tracer=$!
attached=0
for _ in $(seq 300); do grep -qs 'TracerPid:.*[1-9]' "/proc/$daemon/status" && { attached=1; break; }; sleep 0.1; done
ls -lR "$S/extracted" > /dev/null
getfattr -n user.probe "$S/extracted" > /dev/null 2>&1   # one getxattr the trace must show
kill -INT "$tracer"; wait "$tracer" 2>/dev/null
expect_eq "strace followed the daemon" "$attached/$(grep -c user.probe "$WORK/daemon.strace")" "1/1"
expect_eq "ls -lR of a tree just extracted: no ACL asked of the backing nodes" \
    "$(grep -c posix_acl "$WORK/daemon.strace")" "0"
expect_eq "a file extracted under a default ACL has the inherited entry" \
    "$(entries "$S/extracted.acl/tree/dir/d" user)" "1"
expect_eq "and so has a directory" "$(getfacl -cp "$S/extracted.acl/tree/dir/sub" 2>/dev/null | grep -c '^default:user:1001')" "1"
if command -v setcap >/dev/null; then
    expect_eq "a new file has no capability" "$(getcap "$S/later")" ""
    setcap cap_net_raw+ep "$S/later"
    expect_eq "a capability set after that shows" "$(getcap "$S/later" | grep -c cap_net_raw)" "1"
    echo more >> "$S/later"
    expect_eq "and a write takes it away again" "$(getcap "$S/later")" ""
fi
finish
