#!/usr/bin/env bash
# Unnamed files: open(dir, O_TMPFILE) in the mount (the kernel's FUSE_TMPFILE, handed
# to create: Sources/FuseLoop/tmpfile_request.c). What a user of O_TMPFILE counts on: the file can be
# written and read but is listed nowhere, a link gives it a name (and the name reads
# back after a remount), O_EXCL forbids that link, and a file never linked leaves
# nothing behind. What dpfs adds: it is sealed in the class its directory passes on,
# so a lock takes it like any file of that class, and none is made while that class
# is locked.
source "$(dirname "$0")/lib.sh"

require_tools python3 getfattr setfattr setfacl getfacl
setup_device
unlock_device
D="$MNT/Documents"
daemon=$(daemon_pid)

# unnamed DIR STEP...: runs the steps on one O_TMPFILE opened in DIR and prints what
# each gives. Steps: write:TEXT, read, nlink, list (DIR's names), link:NAME (through
# /proc/self/fd), linkempty:NAME (linkat AT_EMPTY_PATH), excl (opened O_EXCL), keeppath
# (an O_PATH descriptor of it kept, the open one closed), settle (0.3 s), pause (waits
# for a line on stdin), close.
read -r -d '' UNNAMED_STEPS <<'PY'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH = -100, 0x400, 0x1000
directory, steps = sys.argv[1], sys.argv[2:]
flags = os.O_TMPFILE | os.O_RDWR | (os.O_EXCL if "excl" in steps else 0)
try:
    fd = os.open(directory, flags, 0o640)
except OSError as error:
    print(f"open: {error.strerror}"); sys.exit(0)
out = []
for step in steps:
    kind, _, argument = step.partition(":")
    try:
        if kind == "write": os.pwrite(fd, argument.encode(), 0); out.append("written")
        elif kind == "read": out.append(os.pread(fd, 100, 0).decode())
        elif kind == "nlink": out.append(str(os.fstat(fd).st_nlink))
        elif kind == "list": out.append(",".join(sorted(os.listdir(directory))) or "-")
        elif kind in ("link", "linkempty"):
            target = os.path.join(directory, argument).encode()
            if kind == "link":
                rc = libc.linkat(AT_FDCWD, f"/proc/self/fd/{fd}".encode(), AT_FDCWD, target, AT_SYMLINK_FOLLOW)
            else:
                rc = libc.linkat(fd, b"", AT_FDCWD, target, AT_EMPTY_PATH)
            out.append("linked" if rc == 0 else os.strerror(ctypes.get_errno()))
        elif kind == "keeppath":  # an O_PATH descriptor of it, then the open one closed
            kept = os.open(f"/proc/self/fd/{fd}", os.O_PATH); os.close(fd); fd = kept; out.append("kept")
        elif kind == "pause": print(" ".join(out), flush=True); out = []; sys.stdin.readline()
        elif kind == "settle": time.sleep(0.3)  # the daemon has had the release
        elif kind == "close": os.close(fd); out.append("closed")
    except OSError as error:
        out.append(error.strerror)
print(" ".join(out))
PY
# (Its stdin stays the caller's: a pause reads it.)
unnamed() { python3 -c "$UNNAMED_STEPS" "$@"; }

# The daemon's descriptors of backing files without a name (O_TMPFILE ones; spares are
# some too, but no run of creates comes before the check that counts them).
unnamed_backing() { ls -l "/proc/$daemon/fd" 2>/dev/null | grep -c '/#[0-9]* (deleted)$'; }

mkdir "$D/plain"
expect_eq "an unnamed file is written, read back, has no link and is listed nowhere" \
    "$(unnamed "$D/plain" write:draft read nlink list close)" "written draft 0 - closed"
backing_files() { find "$DEV/sandbox" -type f | wc -l; }
entries=$(backing_files)
coproc UNSEEN { unnamed "$D/plain" write:unseen pause close; }
read -r written <&"${UNSEEN[0]}"
expect_eq "while it is open the backing tree has no entry for it" "$written $(backing_files)" "written $entries"
echo >&"${UNSEEN[1]}"
read -r closed <&"${UNSEEN[0]}"
wait "$UNSEEN_PID" 2>/dev/null
expect_eq "one never linked leaves no backing file" "$closed $(backing_files)" "closed $entries"
# The kernel forgets a closed file without links at once: its backing file goes with it.
tries=0
while [ "$(unnamed_backing)" != 0 ] && [ $tries -lt 20 ]; do sleep 0.1; tries=$((tries + 1)); done
expect_eq "nor a descriptor in the daemon, once the kernel has forgotten it" "$(unnamed_backing)" "0"

expect_eq "a link through /proc/self/fd names it" \
    "$(unnamed "$D/plain" write:published link:report nlink list read close)" "written linked 1 report published closed"
expect_eq "linkat with AT_EMPTY_PATH too, and a second link counts" \
    "$(unnamed "$D/plain" write:twice linkempty:one link:two nlink close)" "written linked linked 2 closed"
# Closed but held by an O_PATH descriptor: only the daemon's entry keeps the backing
# inode then (UnnamedEntryTests covers its descriptor cache going round meanwhile).
expect_eq "closed but still held (O_PATH), it can be linked, and reads back" \
    "$(unnamed "$D/plain" write:held keeppath settle link:held close) $(cat "$D/plain/held")" \
    "written kept linked closed held"
expect_eq "O_EXCL: the file can never be linked" \
    "$(unnamed "$D/plain" excl write:private link:never list close)" "written No such file or directory held,one,report,two closed"

# A default ACL on the directory passes to it, as to a file created there.
mkdir "$D/shared"
check "setfacl -d -m u:1001:rw on a directory" setfacl -d -m u:1001:rw "$D/shared"
unnamed "$D/shared" write:x link:inherits close >/dev/null
if getfacl --omit-header "$D/shared/inherits" 2>/dev/null | grep -q '^user:1001:rw-'; then
    pass "it inherits the directory's default ACL"
else
    fail "it inherits the directory's default ACL" "$(getfacl --omit-header "$D/shared/inherits" 2>&1 | tr '\n' ' ')"
fi

# Class: the directory's, and a lock takes an open one like any file of that class.
mkdir "$D/vault"
check "the directory's class set to complete" setfattr -n user.dpfs.protection -v complete "$D/vault"
coproc HOLDER { unnamed "$D/vault" write:secret pause read pause read link:kept close; }
read -r first <&"${HOLDER[0]}"
expect_eq "an unnamed file in a complete directory is written" "$first" "written"
check "lock --now" "$DPFS" lock "$MNT" --now
echo >&"${HOLDER[1]}"
read -r locked <&"${HOLDER[0]}"
expect_eq "the lock takes it while it is open (complete)" "$locked" "Operation not permitted"
check "unlock" unlock_device
echo >&"${HOLDER[1]}"
read -r after <&"${HOLDER[0]}"
expect_eq "after the unlock it reads again, and its link names it" "$after" "secret linked closed"
wait "$HOLDER_PID" 2>/dev/null
expect_eq "the linked file has the directory's class" \
    "$(getfattr --absolute-names --only-values -n user.dpfs.protection "$D/vault/kept" 2>&1)" "complete"
check "lock --now again" "$DPFS" lock "$MNT" --now
expect_eq "no unnamed file is made in a complete directory while locked" \
    "$(unnamed "$D/vault" write:x)" "open: Operation not permitted"
check "unlock again" unlock_device

# A remount: the linked names read back whole, the others never existed.
"$DPFS" unmount "$MNT" && mount_device && unlock_device >/dev/null
expect_eq "after a remount the linked files read back" \
    "$(cat "$D/plain/report" "$D/plain/one" "$D/vault/kept")" "publishedtwicesecret"
expect_eq "and the directories list only them" "$(ls "$D/plain" "$D/vault" | tr '\n' ' ')" \
    "$D/plain: held one report two  $D/vault: kept "
"$DPFS" unmount "$MNT" || fail "unmount"
expect_eq "fsck finds every file whole" "$("$DPFS" fsck "$DEV" --passcode-file "$PASS" 2>&1 | tail -1)" \
    "checked 6 files, 6 blocks: clean"

finish
