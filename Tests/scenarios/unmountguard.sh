#!/usr/bin/env bash
# The unmount guard (SandboxFS/UnmountGuard.swift): the kernel opens directories itself
# (no OPENDIR, no RELEASEDIR), so fusermount3's auto_unmount could no longer tell a dead
# daemon; each mount has a process of its own that takes the mount down when the daemon
# dies without unmounting, for root and for a user, and leaves every other mount alone,
# also a later mount that got the same device number. The guard is there before the
# mount: a daemon killed the moment its mount appears leaves none either.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

guard_of() { pgrep -f "^dpfs unmount $1 --when-closed 3 --source " | head -1; }
mounted() { grep -qs " ${1// /\\\\040} fuse" /proc/mounts; }  # /proc/mounts writes a space as \040
unmounted_within() { for _ in $(seq 100); do mounted "$1" || return 0; sleep 0.1; done; return 1; }
gone_within() { for _ in $(seq 100); do [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = "" ] && return 0
                                       [ "$(ps -o stat= -p "$1" | cut -c1)" = Z ] && return 0; sleep 0.1; done; return 1; }

SPACED="$WORK/mount point"
USER_WORK="$WORK/user, one"   # a comma and a space: fusermount3 gets the device's path escaped
USER_MNT="$USER_WORK/mnt"
user_daemon=""
FUSECTL=/sys/fs/fuse/connections
fusectl_mounted_here=0
scenario_cleanup() {
    if [ "$fusectl_mounted_here" = 1 ]; then umount "$FUSECTL" 2>/dev/null; fi
    if mounted "$SPACED"; then fusermount3 -uz "$SPACED" 2>/dev/null; fi
    if mounted "$USER_MNT"; then fusermount3 -uz "$USER_MNT" 2>/dev/null; fi
    if [ -n "$user_daemon" ] && kill -0 "$user_daemon" 2>/dev/null; then kill -9 "$user_daemon"; fi
}

setup_device
unlock_device
daemon=$(daemon_pid "$MNT")
guard=$(guard_of "$MNT")
check "the mount has its guard" test -n "$guard"
expect_eq "a child of the daemon, in a session of its own" \
    "$(ps -o ppid=,sid= -p "$guard" | awk '{print $1, $2}')" "$daemon $guard"
expect_eq "which holds no /dev/fuse" "$(ls -l "/proc/$guard/fd" | grep -c /dev/fuse)" "0"

mkdir -p "$MNT/Documents/a/b/c"
if fuse_ops_available; then
    ops=$("$ROOT/Scripts/fuse-ops" --mount "$MNT" "ls -lR '$MNT/Documents' > /dev/null")
    expect_eq "a listing of 4 directories sends no OPENDIR or RELEASEDIR" \
        "$(printf '%s\n' "$ops" | grep -c -E 'FUSE_(OPENDIR|RELEASEDIR)$')" "0"
else
    log "no fuse tracepoints in this kernel (Linux 6.16+): request count skipped"
fi
expect_eq "and lists them" "$(find "$MNT/Documents" -type d | wc -l)" "4"

kill -TERM "$guard"
sleep 0.3
check "the guard outlives a SIGTERM (only its daemon's end ends it)" kill -0 "$guard"
check "a SIGKILL" kill -KILL "$daemon"
check "leaves no mount behind" unmounted_within "$MNT"
check "and the guard ends" gone_within "$guard"

# The daemon killed while its guard cannot look, the dead mount taken down by hand and
# the device mounted again there (the kernel hands the device number out again): the
# guard that looks only now sees another mount and leaves it.
mount_device
daemon=$(daemon_pid "$MNT")
guard=$(guard_of "$MNT")
# Unique mount ids (STATX_MNT_ID_UNIQUE) came with Linux 6.8.
unique_ids=$(uname -r | awk -F. '{print ($1 > 6 || ($1 == 6 && $2 >= 8)) ? 1 : 0}')
old_device=$(findmnt -no MAJ:MIN "$MNT" | tr -d " ")
kill -STOP "$guard"
kill -KILL "$daemon"
for _ in $(seq 50); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
umount -l "$MNT"
mount_device
log "device numbers: the dead mount's $old_device, the new one's $(findmnt -no MAJ:MIN "$MNT" | tr -d " ")"
kill -CONT "$guard"
check "a stopped guard whose daemon was killed ends" gone_within "$guard"
sleep 0.5
if [ "$unique_ids" = 1 ]; then
    check "and leaves the new mount in place" mounted "$MNT"
else
    # Without unique mount ids (before Linux 6.8) only the device number tells, and
    # the kernel may have handed it to the new mount: what this guard did is not checked.
    log "no unique mount ids in this kernel (Linux 6.8+): the new mount's survival not checked"
fi
mounted "$MNT" && "$DPFS" unmount "$MNT"

# A connection aborted through the fuse control filesystem: the daemon's loop ends,
# libfuse leaves the mount in place, and the guard takes it down.
if ! grep -qs " $FUSECTL fusectl" /proc/mounts; then
    mount -t fusectl fusectl "$FUSECTL" && fusectl_mounted_here=1
fi
mount_device
daemon=$(daemon_pid "$MNT")
minor=$(findmnt -no MAJ:MIN "$MNT" | tr -d " " | cut -d: -f2)
if [ -w "$FUSECTL/$minor/abort" ]; then
    echo 1 > "$FUSECTL/$minor/abort"
    check "an aborted connection ends the daemon" gone_within "$daemon"
    check "and its mount is taken down" unmounted_within "$MNT"
else
    fail "an aborted connection" "no $FUSECTL/$minor/abort to write"
fi
if [ "$fusectl_mounted_here" = 1 ]; then umount "$FUSECTL" && fusectl_mounted_here=0; fi

# A later mount on the same mount point (often with the same device number, which the
# kernel hands out again) is not the dead daemon's: a guard that looks only now leaves it.
mount_device
daemon=$(daemon_pid "$MNT")
guard=$(guard_of "$MNT")
kill -STOP "$guard"
"$DPFS" unmount "$MNT"
check_fails "unmounted while its guard is stopped" mounted "$MNT"
mount_device
unlock_device
kill -CONT "$guard"
check "the stopped guard ends" gone_within "$guard"
sleep 0.5
check "and the new mount stays" mounted "$MNT"
check "and serves" test -d "$MNT/Documents/a/b/c"
new_guard=$(guard_of "$MNT")
"$DPFS" unmount "$MNT"
check "an unmount ends the guard" gone_within "$new_guard"

# A daemon killed the moment its mount shows in the mount table, before it can tell its
# guard which mount it made: the guard, started before the mount, takes down the dead
# mount of this device it finds there.
raced=0
for round in 1 2 3 4 5; do
    python3 - "$DPFS" "$DEV" "$MNT" "$WORK/raced.log" <<'PY' || fail "kill at mount, round $round" "no mount seen"
import os, signal, subprocess, sys, time
dpfs, dev, mnt, log = sys.argv[1:]
escaped = " " + mnt.replace(" ", "\\040") + " "
with open(log, "a") as out:
    daemon = subprocess.Popen([dpfs, "mount", dev, mnt, "--foreground"], stdout=out, stderr=out)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    with open("/proc/self/mountinfo") as table:
        if any(escaped in line and " fuse.dpfs " in line for line in table):
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
            sys.exit(0)
daemon.kill(); daemon.wait()
sys.exit(1)
PY
    if unmounted_within "$MNT"; then raced=$((raced + 1)); else umount -l "$MNT"; fi
done
expect_eq "a daemon killed as its mount appears leaves no mount (5 rounds)" "$raced" "5"
log "rounds in which the daemon died before naming its mount: $(grep -c 'named no mount' "$WORK/raced.log")"

# What a guard whose daemon named no mount leaves: started by hand on a pipe that
# closes at once, over a dead mount of this device (its daemon killed, no guard). It
# waits up to 10 s for a dead mount; a statfs that never returns must not hold it.
hand_guard() { timeout -s KILL 30 "$DPFS" unmount "${2:-$MNT}" --when-closed 3 --source "$1" 3< <(true) 2>>"$WORK/hand.log"; }
DPFS_NO_AUTO_UNMOUNT=1 mount_device
expect_eq "the mount's source is dpfs:DEVICE" "$(findmnt -no SOURCE "$MNT")" "dpfs:$DEV"
hand_guard "dpfs:$DEV"
check "a live mount of this device stays" mounted "$MNT"
kill -KILL "$(daemon_pid "$MNT")"
sleep 0.3
hand_guard "dpfs:$WORK/another"
check "a dead mount of another device stays" mounted "$MNT"
hand_guard "dpfs:$DEV"
check_fails "a dead mount of this device is taken down" mounted "$MNT"
mounted "$MNT" && umount -l "$MNT"

# A mount point whose path the mount table escapes, of a device whose path holds a
# comma (which libfuse takes as the end of an -o option unless escaped) and a space.
mkdir -p "$SPACED"
COMMA_DEV="$WORK/device, two"
"$DPFS" init "$COMMA_DEV" --passcode-file "$PASS" --secret-store "file:$WORK/secrets two" > /dev/null
"$DPFS" mount "$COMMA_DEV" "$SPACED" > /dev/null
check "a mount on a path with a space is listed" mounted "$SPACED"
expect_eq "its source names the device whose path holds a comma" "$(findmnt -no SOURCE "$SPACED")" "dpfs:$COMMA_DEV"
daemon=$(daemon_pid "$SPACED")
check "has its guard" test -n "$(guard_of "$SPACED")"
kill -KILL "$daemon"
check "and a SIGKILL leaves no mount there" unmounted_within "$SPACED"
DPFS_NO_AUTO_UNMOUNT=1 "$DPFS" mount "$COMMA_DEV" "$SPACED" > /dev/null
kill -KILL "$(daemon_pid "$SPACED")"
sleep 0.3
hand_guard "dpfs:$COMMA_DEV" "$SPACED"
check_fails "a guard told no mount finds the dead one by a source with a comma and a space" mounted "$SPACED"
mounted "$SPACED" && umount -l "$SPACED"

# Without the guard, by request.
DPFS_NO_AUTO_UNMOUNT=1 mount_device
expect_eq "DPFS_NO_AUTO_UNMOUNT: no guard" "$(guard_of "$MNT")" ""
"$DPFS" unmount "$MNT"

# A user's mount (fusermount3 mounts it; the guard unmounts through fusermount3 too).
mkdir -p "$USER_MNT"
printf '1234\n' > "$USER_WORK/pass"
chmod 600 "$USER_WORK/pass"
chmod 755 "$WORK"
chown -R 65534:65534 "$USER_WORK"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$USER_WORK" "$@"; }
as_nobody "$DPFS" init "$USER_WORK/device" --passcode-file "$USER_WORK/pass" \
    --secret-store "file:$USER_WORK/secrets" > /dev/null || fail "init as nobody"
if as_nobody "$DPFS" mount "$USER_WORK/device" "$USER_MNT" > /dev/null; then
    user_daemon=$(pgrep -u 65534 -f "^dpfs mount $USER_WORK/device " | head -1)
    user_guard=$(guard_of "$USER_MNT")
    expect_eq "a user's mount has its guard, as that user" "$(ps -o uid= -p "$user_guard" | tr -d ' ')" "65534"
    check "a SIGKILL of the user's daemon" kill -KILL "$user_daemon"
    check "leaves no mount behind" unmounted_within "$USER_MNT"
    check "and the guard ends" gone_within "$user_guard"
    # fusermount3 still mounting when the daemon is killed: held before its mount(2)
    # (strace delays the call by 3 s; -u keeps it set-user-ID), it mounts after the
    # daemon's end and fails to hand over the connection, leaving the mount dead. The
    # guard, told no mount and finding none at first, waits for it and takes it down.
    strace -f -qq -o "$WORK/held.strace" -u nobody -e trace=mount -e inject=mount:delay_enter=3000000 \
        env HOME="$USER_WORK" "$DPFS" mount "$USER_WORK/device" "$USER_MNT" --foreground > "$WORK/held.log" 2>&1 &
    tracer=$!
    held=""
    for _ in $(seq 100); do
        user_daemon=$(pgrep -P "$tracer" | head -1)
        [ -n "$user_daemon" ] && held=$(pgrep -P "$user_daemon" -x fusermount3) && break
        sleep 0.05
    done
    check "fusermount3 is held before mounting" test -n "$held"
    check_fails "and nothing is mounted yet" mounted "$USER_MNT"
    check "the daemon killed then" kill -KILL "$user_daemon"
    { wait "$tracer"; } 2>/dev/null   # strace follows fusermount3 and the guard to their end
    check_fails "the dead mount fusermount3 made after it is taken down" mounted "$USER_MNT"
    expect_eq "by the guard, told no mount" "$(grep -c 'named no mount' "$WORK/held.log")" "1"
    mounted "$USER_MNT" && fusermount3 -uz "$USER_MNT"
else
    fail "mount as nobody" "$(tail -2 "$USER_WORK/device/daemon.log" 2>/dev/null)"
fi
finish
