#!/usr/bin/env bash
# Issue 14: a new file, directory or node gets the mode its caller asked for, exactly
# as on a local filesystem (ext4 under /var/tmp is the reference): the kernel applies
# the caller's umask, and the daemon's own umask — inherited from the shell that ran
# `dpfs mount` — must not be applied a second time. Checked with the daemon started
# under umask 022 and 077, as root and as another user (-o allow_other).
source "$(dirname "$0")/lib.sh"

cat > "$WORK/create.py" <<'PY'
import os, stat, sys
directory, tag = sys.argv[1], sys.argv[2]
def made(what, path):
    print(f"{what}: {stat.S_IMODE(os.lstat(path).st_mode):04o}")
def create(name, mode):
    path = f"{directory}/{tag}-{name}"
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))
    return path
os.umask(0)
made("umask 0, file 0642", create("f642", 0o642))
made("umask 0, file 0666", create("f666", 0o666))
made("umask 0, file 04777", create("f4777", 0o4777))
made("umask 0, file 02755", create("f2755", 0o2755))
path = f"{directory}/{tag}-d777"; os.mkdir(path, 0o777); made("umask 0, dir 0777", path)
path = f"{directory}/{tag}-d1777"; os.mkdir(path, 0o1777); made("umask 0, dir 01777", path)
path = f"{directory}/{tag}-fifo"; os.mkfifo(path, 0o666); made("umask 0, mknod fifo 0666", path)
path = f"{directory}/{tag}-reg"; os.mknod(path, stat.S_IFREG | 0o606); made("umask 0, mknod file 0606", path)
os.umask(0o027)
made("umask 027, file 0666", create("m666", 0o666))
path = f"{directory}/{tag}-m777"; os.mkdir(path, 0o777); made("umask 027, dir 0777", path)
path = f"{directory}/{tag}-mfifo"; os.mkfifo(path, 0o666); made("umask 027, mknod fifo 0666", path)
PY
chmod 644 "$WORK/create.py"
chmod 755 "$WORK"
REF="$WORK/reference"
mkdir -m 1777 "$REF"
as() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }
# The system interpreter: one under root's home (pyenv) is out of other users' reach.
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=$(command -v python3)

# compare "label" run-prefix...: runs create.py in the mount and in the reference
# directory the same way and expects the same mode for every call.
compare() {
    local label=$1; shift
    local tag=t$RANDOM got expected
    got=$("$@" "$PYTHON" "$WORK/create.py" "$S" "$tag" 2>&1)
    expected=$("$@" "$PYTHON" "$WORK/create.py" "$REF" "$tag" 2>&1)
    if [ "$(printf '%s\n' "$expected" | grep -c ': [0-7]*$')" != 11 ]; then
        fail "$label: the reference run made every node" "$expected"; return
    fi
    while IFS= read -r line; do
        what=${line%%: *}
        expect_eq "$label: $what → ${line##*: }" "$(printf '%s\n' "$got" | grep -F "$what:" | sed 's/.*: //')" "${line##*: }"
    done <<< "$expected"
}
nobody() { "$@"; }

MOUNT_ARGS="-o allow_other"
"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS" >/dev/null || { fail "init"; finish; }
for daemon_umask in 022 077; do
    (umask "$daemon_umask"; mount_device) || { fail "mount under umask $daemon_umask"; finish; }
    pid=$(daemon_pid)
    expect_eq "the daemon runs with umask 0 (started under $daemon_umask)" \
        "$(sed -n 's/^Umask:[[:space:]]*//p' "/proc/$pid/status")" "0000"
    expect_eq "the control socket is 0600 (daemon started under $daemon_umask)" \
        "$(stat -c %a "/run/dpfs/$pid.sock" 2>&1)" 600
    for file in "$DEV"/keychain.sqlite*; do
        expect_eq "$(basename "$file") is 0600 (daemon started under $daemon_umask)" "$(stat -c %a "$file")" 600
    done
    unlock_device
    chmod 755 "$MNT"
    S="$MNT/Documents/shared-$daemon_umask"
    mkdir -m 1777 "$S"
    compare "daemon umask $daemon_umask, root" nobody
    compare "daemon umask $daemon_umask, uid 1001" as 1001
    "$DPFS" unmount "$MNT" || fail "unmount"
done

# The daemon's own files keep their explicit modes whatever umask it runs with.
expect_eq "keybag.json is 0600" "$(stat -c %a "$DEV/keybag.json")" 600
expect_eq "the device secret is 0600" "$(stat -c %a "$SECRETS"/*.secret)" 600
expect_eq "the device's record is 0600" "$(stat -c %a "$SECRETS"/*.state)" 600
expect_eq "its store directory is 0700" "$(stat -c %a "$SECRETS")" 700
expect_eq "the control socket directory is 0700" "$(stat -c %a /run/dpfs)" 700
finish
