#!/usr/bin/env bash
# A class given at creation (as iOS's open_dprotected_np takes one): a thread sets
# user.dpfs.create-protection on a directory, and its next file created there takes
# that class, also where the directory's own class is unavailable — a `none` file in
# an untilFirstAuth directory before the first unlock, as iOS allows. Only that thread
# and only that directory are affected; a class whose key is not at hand still refuses.
source "$(dirname "$0")/lib.sh"
require_tools python3

setup_device
expect_eq "before first unlock" "$(state_of)" beforeFirstUnlock
check_error "a plain create in Documents (untilFirstAuth) is EPERM" "Operation not permitted" \
    sh -c "echo x > '$MNT/Documents/plain'"

# create DIR NAME CLASS: one thread gives the class, then creates and writes the file.
create() {
    python3 - "$@" <<'PY'
import os, sys
directory, name, cls = sys.argv[1:4]
os.setxattr(directory, "user.dpfs.create-protection", cls.encode())
try:
    fd = os.open(os.path.join(directory, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
finally:
    os.removexattr(directory, "user.dpfs.create-protection")
os.write(fd, b"made before the first unlock\n")
os.close(fd)
PY
}
check "a none file, its class given at creation" create "$MNT/Documents" launch.txt none
expect_eq "it is none" "$("$DPFS" protection get "$MNT/Documents/launch.txt")" none
check "it reads back" grep -q "made before" "$MNT/Documents/launch.txt"
check "a completeUnlessOpen file (public-key wrap)" create "$MNT/Documents" upload.part completeUnlessOpen
expect_eq "it is completeUnlessOpen" "$("$DPFS" protection get "$MNT/Documents/upload.part")" completeUnlessOpen
check_error "closed, it cannot be reopened before the unlock" "Operation not permitted" cat "$MNT/Documents/upload.part"
check_error "a complete file given at creation is still EPERM" "Operation not permitted" \
    create "$MNT/Documents" secret.txt complete
check_fails "and nothing of it is left" test -e "$MNT/Documents/secret.txt"
check_error "an untilFirstAuth one too" "Operation not permitted" create "$MNT/Documents" c.txt untilFirstAuth

# Only the thread that gave it: another process's create in the directory meanwhile
# takes the directory's class (EPERM here).
out=$(python3 - "$MNT/Documents" <<'PY'
import os, subprocess, sys
d = sys.argv[1]
os.setxattr(d, "user.dpfs.create-protection", b"none")
other = subprocess.run(["sh", "-c", f"echo x > '{d}/other'"], capture_output=True)
print("other:", other.returncode)
fd = os.open(os.path.join(d, "mine"), os.O_CREAT | os.O_WRONLY, 0o644)
os.close(fd)
print("mine: made")
PY
)
check "another process's create does not take the class" grep -q "other: [1-9]" <<<"$out"
check "the thread's own create still does" grep -q "mine: made" <<<"$out"
expect_eq "its file is none" "$("$DPFS" protection get "$MNT/Documents/mine")" none

check_error "an unknown class is EINVAL" "Invalid argument" \
    setfattr -n user.dpfs.create-protection -v sometimes "$MNT/Documents"
check_error "on a file it is EINVAL" "Invalid argument" \
    setfattr -n user.dpfs.create-protection -v none "$MNT/Documents/launch.txt"
check_fails "it is never listed" sh -c "getfattr -d -m - '$MNT/Documents' 2>/dev/null | grep -q create-protection"

check "unlock" unlock_device
check "after the unlock the completeUnlessOpen file reads" grep -q "made before" "$MNT/Documents/upload.part"
check "an ordinary create takes the directory's class again" sh -c "echo y > '$MNT/Documents/later'"
expect_eq "untilFirstAuth" "$("$DPFS" protection get "$MNT/Documents/later")" untilFirstAuth
finish
