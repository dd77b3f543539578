#!/usr/bin/env bash
# A mount that fails after every check, or at the keychain's own open, leaves the
# keychain's files as it found them: keychain.sqlite, and the -wal and -shm a killed
# daemon left beside it, byte for byte, with no -wal or -shm made where there was none
# (the keychain opens for writing only once the mount stands), and no mount behind. A
# hot -journal (a write by sqlite3 in rollback mode, cut short) is refused by mount
# and fsck with what to do, and left as it is. dpfs(5), "The device's record".
source "$(dirname "$0")/lib.sh"
require_tools sqlite3 chattr

KEYCHAIN="$DEV/keychain.sqlite"
USER_WORK="$WORK/user"
USER_MNT="$USER_WORK/mnt"
# The user's runtime directory, short as /run/user/UID is: $WORK may be too deep for
# the daemon's sockets, which would then go to /tmp/dpfs-UID instead.
USER_RUN=$(mktemp -d /tmp/dpfs-xdg.XXXXXX)
as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$USER_WORK" XDG_RUNTIME_DIR="$USER_RUN" "$@"
}
scenario_cleanup() {
    chattr -i "$KEYCHAIN" 2>/dev/null
    if grep -qs " $USER_MNT fuse" /proc/mounts; then
        as_nobody "$DPFS" unmount "$USER_MNT" 2>/dev/null || fusermount3 -uz "$USER_MNT" 2>/dev/null
    fi
    rm -rf "$USER_RUN"
    return 0
}

# The keychain's files: their names and bytes.
keychain_files() { (cd "$DEV" && ls -A | grep '^keychain' && sha256sum keychain.sqlite*); }

# fails_late WHAT MESSAGE MOUNT-ARGUMENTS...: the mount fails with MESSAGE, leaving the
# keychain's files as they were, no mount, and no death of a daemon recorded.
fails_late() {
    local what=$1 message=$2 before; shift 2
    before=$(keychain_files)
    check_error "$what: the mount fails" "$message" "$DPFS" mount "$DEV" "$MNT" "$@"
    expect_eq "$what: the keychain's files are left byte for byte" "$(keychain_files)" "$before"
    check_fails "$what: nothing is left mounted" grep -qs " $MNT fuse" /proc/mounts
    check_fails "$what: no daemon died with its mount in place" grep -q "died" "$DEV/daemon.log"
}

setup_device
unlock_device
printf 'one' | "$DPFS" keychain add "$MNT" --service first >/dev/null || fail "keychain add"
"$DPFS" unmount "$MNT" || fail "unmount"
# A clean unmount folds the -wal into the file and removes it and the -shm: the file
# alone is the keychain. Without them, a failed mount must not make them.
expect_eq "unmounted, the keychain's file is alone, no -wal or -shm" "$(cd "$DEV" && ls -d keychain.sqlite*)" \
    "keychain.sqlite"

# 1. Refused by FUSE: an option libfuse does not know (named, before the daemon
# starts), and one the kernel refuses after the checks (blksize is fuseblk's only).
fails_late "an option libfuse does not know" "unknown mount option .dpfs_no_such_option." -o dpfs_no_such_option
fails_late "an option the kernel refuses" "cannot mount on $MNT" -o blksize=4096

# 2. The keychain's own open fails, after the mount: a file no one may write (even
# root: the immutable attribute), which the checks read all the same. The mount made
# is taken down, not left dead.
chattr +i "$KEYCHAIN" || fail "chattr +i"
fails_late "a keychain no one may write" "cannot open the item store $KEYCHAIN: Operation not permitted"
chattr -i "$KEYCHAIN"

# 3. The daemon killed after a write: the write is in the -wal, a -shm beside it.
mount_device
unlock_device
printf 'two' | "$DPFS" keychain add "$MNT" --service second >/dev/null || fail "keychain add"
pid=$(daemon_pid)
kill -9 "$pid"
within 60 sh -c "! kill -0 $pid" || fail "the killed daemon ends"
expect_eq "the killed daemon left a -wal and a -shm" "$(cd "$DEV" && ls -d keychain.sqlite-* | tr '\n' ' ')" \
    "keychain.sqlite-shm keychain.sqlite-wal "
within 60 grep -q "died" "$DEV/daemon.log" || fail "the watch records the killed daemon's death"
: > "$DEV/daemon.log"
# The kernel's refusal first: that mount takes the dead mount down before it fails,
# where an option libfuse does not know is refused before anything, dead mount and all.
fails_late "a killed daemon's keychain, refused by the kernel" "cannot mount on $MNT" -o blksize=4096
fails_late "a killed daemon's keychain, refused by libfuse" "unknown mount option .dpfs_no_such_option." -o dpfs_no_such_option
mount_device
unlock_device
expect_eq "then it mounts with the write its -wal held" "$("$DPFS" keychain find "$MNT" --service second 2>&1)" "two"
"$DPFS" unmount "$MNT" || fail "unmount"

# 4. A hot -journal: sqlite3's write in rollback mode, killed before its commit, with
# pages of it in the file already.
sqlite3 "$KEYCHAIN" "PRAGMA journal_mode = DELETE" >/dev/null || fail "journal_mode = DELETE"
python3 - "$KEYCHAIN" <<'PY'
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size = 2")  # the write's pages reach the file before any commit
db.execute("BEGIN")
db.execute("CREATE TABLE cut_short (x)")
for _ in range(200):
    db.execute("INSERT INTO cut_short VALUES (randomblob(4000))")
os._exit(0)
PY
expect_eq "the cut-short write left a -journal" "$(cd "$DEV" && ls -d keychain.sqlite-*)" "keychain.sqlite-journal"
before=$(keychain_files)
HOT="the keychain $KEYCHAIN has a hot journal, $KEYCHAIN-journal: .*sqlite3 $KEYCHAIN 'PRAGMA integrity_check'"
check_error "a hot -journal is refused at mount, with what to do" "$HOT" "$DPFS" mount "$DEV" "$MNT"
out=$("$DPFS" mount "$DEV" "$MNT" 2>&1)
expect_eq "in one line" "$(printf '%s\n' "$out" | wc -l)" "1"
expect_eq "the keychain and its -journal are left byte for byte" "$(keychain_files)" "$before"
check_error "fsck reports it" "keychain.sqlite: $HOT" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
expect_eq "and fsck leaves them so too" "$(keychain_files)" "$before"
check "rolled back as the refusal says" sqlite3 "$KEYCHAIN" "PRAGMA integrity_check"
mount_device
unlock_device
expect_eq "then it mounts with what it held before the cut-short write" \
    "$("$DPFS" keychain find "$MNT" --service second 2>&1)" "two"
"$DPFS" unmount "$MNT" || fail "unmount"
expect_eq "and is in WAL mode again" "$(sqlite3 "$KEYCHAIN" 'PRAGMA journal_mode')" "wal"

# A device of a user other than root, with a runtime directory for its daemons' sockets.
mkdir -p "$USER_MNT" "$USER_WORK/secrets" "$USER_RUN"
chmod 700 "$USER_WORK/secrets" "$USER_RUN"
printf '1234\n' > "$USER_WORK/pass"
chmod 600 "$USER_WORK/pass"
chmod 755 "$WORK"
chown -R 65534:65534 "$USER_WORK"
chown 65534:65534 "$USER_RUN"
as_nobody "$DPFS" init "$USER_WORK/device" --passcode-file "$USER_WORK/pass" \
    --secret-store "file:$USER_WORK/secrets" > /dev/null || fail "init as nobody"

# 5. allow_other asked by a user other than root, which /etc/fuse.conf does not allow:
# fusermount3 refuses the mount, and says why only on the daemon's stderr. The user is
# told the reason, before a daemon starts.
if grep -Eqs '^[[:space:]]*user_allow_other[[:space:]]*(#.*)?$' /etc/fuse.conf; then
    log "skipped the allow_other refusal: /etc/fuse.conf has user_allow_other"
else
    REASON="-o allow_other is allowed to a user other than root only if /etc/fuse.conf has the line user_allow_other"
    check_error "allow_other without user_allow_other: the user is told why" "$REASON" \
        as_nobody "$DPFS" mount "$USER_WORK/device" "$USER_MNT" -o allow_other
    out=$(as_nobody "$DPFS" mount "$USER_WORK/device" "$USER_MNT" -o noatime,allow_other 2>&1)
    expect_eq "as a usage error (exit 64)" "$?" "64"
    expect_eq "in one line" "$(printf '%s\n' "$out" | wc -l)" "1"
    check_fails "nothing is mounted" grep -qs " $USER_MNT fuse" /proc/mounts
    check_fails "no daemon started" test -e "$USER_WORK/device/daemon.log"
    check "without allow_other the same user mounts" as_nobody "$DPFS" mount "$USER_WORK/device" "$USER_MNT"
    check "and unmounts" as_nobody "$DPFS" unmount "$USER_MNT"
fi

# 6. fusermount3 refuses a user's mount point: its reason, which it writes to the
# daemon's stderr, is the one error line; and the daemon, gone, leaves no control
# socket behind (no later daemon of the user's may come to clear it).
sockets() { (cd "$USER_RUN/dpfs" 2>/dev/null && ls -A | grep '\.sock$'); }
refused() {
    local what=$1 mountpoint=$2 reason=$3 out
    out=$(as_nobody "$DPFS" mount "$USER_WORK/device" "$mountpoint" 2>&1)
    expect_eq "$what: the mount fails (exit 1)" "$?" "1"
    expect_eq "$what: fusermount3's reason in one line" \
        "$(printf '%s\n' "$out" | grep -c "^Error: cannot mount on $mountpoint: fusermount3: $reason")" "1"
    expect_eq "$what: and nothing else" "$(printf '%s\n' "$out" | wc -l)" "1"
    check_fails "$what: nothing is mounted" grep -qs " $mountpoint fuse" /proc/mounts
    expect_eq "$what: no control socket is left" "$(sockets)" ""
    check "$what: the reason is in daemon.log too" \
        grep -q "^fusermount3: $reason" "$USER_WORK/device/daemon.log"
}
mkdir -m 555 "$USER_WORK/readonly"
chown 65534:65534 "$USER_WORK/readonly"
refused "a mount point of the user's it may not write" "$USER_WORK/readonly" "user has no write access to mountpoint"
mkdir -m 755 "$USER_WORK/root"
refused "a mount point of root's" "$USER_WORK/root" "user has no write access to mountpoint"
check "then the user mounts on its own directory" as_nobody "$DPFS" mount "$USER_WORK/device" "$USER_MNT"
expect_eq "with one control socket" "$(sockets | wc -l)" "1"
check "and unmounts" as_nobody "$DPFS" unmount "$USER_MNT"

# 7. Root mounts, or checks, the user's device: its secret store, mode 0700 as it must
# be, is the user's, and the refusal says so, not to chmod it.
OWNER="secret store file:$USER_WORK/secrets is not safe: $USER_WORK/secrets is owned by uid 65534, not by you (uid 0): run dpfs as uid 65534"
check_error "root's mount of the user's device names the store's owner" "$OWNER" \
    "$DPFS" mount "$USER_WORK/device" "$MNT"
check_error "and so does root's fsck" "$OWNER" "$DPFS" fsck "$USER_WORK/device" --passcode-file "$USER_WORK/pass"
out=$("$DPFS" fsck "$USER_WORK/device" --passcode-file "$USER_WORK/pass" 2>&1)
expect_eq "in one line" "$(printf '%s\n' "$out" | wc -l)" "1"
check_fails "with no chmod to make" grep -q chmod <<< "$out"
check_fails "nothing is mounted" grep -qs " $MNT fuse" /proc/mounts
expect_eq "the store is left as it was" "$(stat -c '%u %a' "$USER_WORK/secrets")" "65534 700"
finish
