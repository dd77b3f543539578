#!/usr/bin/env bash
# The daemon watch (SandboxFS/DaemonWatch.swift): each mount has a process of its own
# that outlives the daemon and records, in daemon.log, a death that left the mount in
# place, dead (fail closed, failclosed.sh). It records nothing for a daemon that
# unmounted, nor for a later mount on the same mount point; it is there before the
# mount, so a daemon killed the moment its mount appears is recorded too. Dead mounts
# come down at `dpfs unmount` or the next `dpfs mount`, for root and for a user, also
# one made by fusermount3 after its daemon died and one whose connection was aborted.
source "$(dirname "$0")/lib.sh"

watch_of() { pgrep -f "^dpfs unmount $1 --when-closed 3 --source " | head -1; }
mounted() { grep -qs " ${1// /\\\\040} fuse" /proc/mounts; }  # /proc/mounts writes a space as \040
gone_within() { for _ in $(seq 300); do [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = "" ] && return 0
                                       [ "$(ps -o stat= -p "$1" | cut -c1)" = Z ] && return 0; sleep 0.1; done; return 1; }
# dead_within PATH [RUNNER...]: PATH shows a mount whose daemon is gone (statfs:
# ENOTCONN), as seen by RUNNER (a user's mount answers only that user).
dead_within() {
    local path=$1; shift
    for _ in $(seq 300); do "$@" stat -f "$path" 2>&1 | grep -q "Transport endpoint is not connected" && return 0; sleep 0.1; done
    return 1
}
deaths_in() { grep -c "died" "$1/daemon.log" 2>/dev/null; }

USER_WORK="$WORK/user, one"   # a comma and a space: fusermount3 gets the device's path escaped
USER_MNT="$USER_WORK/mnt"
SPACED="$WORK/mount point"
user_daemon=""
FUSECTL=/sys/fs/fuse/connections
fusectl_mounted_here=0
scenario_cleanup() {
    if [ "$fusectl_mounted_here" = 1 ]; then umount "$FUSECTL" 2>/dev/null; fi
    if mounted "$SPACED"; then "$DPFS" unmount "$SPACED" 2>/dev/null || fusermount3 -uz "$SPACED" 2>/dev/null; fi
    if mounted "$USER_MNT"; then fusermount3 -uz "$USER_MNT" 2>/dev/null; fi
    if [ -n "$user_daemon" ] && kill -0 "$user_daemon" 2>/dev/null; then kill -9 "$user_daemon"; fi
}

setup_device
unlock_device
daemon=$(daemon_pid "$MNT")
watch=$(watch_of "$MNT")
check "the mount has its watch" test -n "$watch"
expect_eq "a child of the daemon, in a session of its own" \
    "$(ps -o ppid=,sid= -p "$watch" | awk '{print $1, $2}')" "$daemon $watch"
expect_eq "which holds no /dev/fuse" "$(ls -l "/proc/$watch/fd" | grep -c /dev/fuse)" "0"

kill -TERM "$watch"
sleep 0.3
check "the watch outlives a SIGTERM (only its daemon's end ends it)" kill -0 "$watch"
"$DPFS" unmount "$MNT"
check "an unmount ends the watch" gone_within "$watch"
expect_eq "and it records no death" "$(deaths_in "$DEV")" "0"

mount_device
daemon=$(daemon_pid "$MNT")
watch=$(watch_of "$MNT")
check "a SIGKILL" kill -KILL "$daemon"
check "leaves the mount in place, dead" dead_within "$MNT"
check "the watch ends" gone_within "$watch"
expect_eq "having recorded the death once" "$(deaths_in "$DEV")" "1"

# The daemon killed while its watch cannot look, and the device mounted again there
# (the kernel may hand the device number out again): the watch that looks only now
# sees another mount, and records nothing.
mount_device
daemon=$(daemon_pid "$MNT")
watch=$(watch_of "$MNT")
kill -STOP "$watch"
kill -KILL "$daemon"
check "killed with its watch stopped" dead_within "$MNT"
mount_device
kill -CONT "$watch"
check "the stopped watch ends" gone_within "$watch"
# Unique mount ids (STATX_MNT_ID_UNIQUE) came with Linux 6.8; before, only the device
# number tells, which the new mount may have been given.
if uname -r | awk -F. '{ exit !($1 > 6 || ($1 == 6 && $2 >= 8)) }'; then
    expect_eq "and records nothing of the new mount" "$(deaths_in "$DEV")" "1"
else
    log "no unique mount ids in this kernel (Linux 6.8+): what the watch recorded is not checked"
fi
check "the new mount serves" "$DPFS" status "$MNT"

# A connection aborted through the fuse control filesystem: the daemon's loop ends,
# libfuse leaves the mount in place, dead, and the watch records it.
if ! grep -qs " $FUSECTL fusectl" /proc/mounts; then
    mount -t fusectl fusectl "$FUSECTL" && fusectl_mounted_here=1
fi
daemon=$(daemon_pid "$MNT")
minor=$(findmnt -no MAJ:MIN "$MNT" | tr -d " " | cut -d: -f2)
before=$(deaths_in "$DEV")
if [ -w "$FUSECTL/$minor/abort" ]; then
    echo 1 > "$FUSECTL/$minor/abort"
    check "an aborted connection ends the daemon" gone_within "$daemon"
    check "and leaves its mount dead" dead_within "$MNT"
    check "which the watch records" test "$(deaths_in "$DEV")" -gt "$before"
else
    fail "an aborted connection" "no $FUSECTL/$minor/abort to write"
fi
if [ "$fusectl_mounted_here" = 1 ]; then umount "$FUSECTL" && fusectl_mounted_here=0; fi
check "dpfs unmount takes it down" "$DPFS" unmount "$MNT"
check_fails "nothing is mounted" mounted "$MNT"

# A daemon killed the moment its mount shows in the mount table, before it can tell its
# watch which mount it made: the mount is dead, and the next mount replaces it.
recovered=0
for round in 1 2 3; do
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
    dead_within "$MNT" && mount_device && "$DPFS" status "$MNT" > /dev/null && "$DPFS" unmount "$MNT" \
        && recovered=$((recovered + 1))
done
expect_eq "a daemon killed as its mount appears leaves it dead; the next mount replaces it (3 rounds)" "$recovered" "3"
log "rounds in which the daemon died before naming its mount: $(grep -c 'died while mounting' "$WORK/raced.log")"

# A mount point whose path the mount table escapes, of a device whose path holds a
# comma (which libfuse takes as the end of an -o option unless escaped) and a space.
mkdir -p "$SPACED"
COMMA_DEV="$WORK/device, two"
"$DPFS" init "$COMMA_DEV" --passcode-file "$PASS" --secret-store "file:$WORK/secrets two" --create > /dev/null
"$DPFS" mount "$COMMA_DEV" "$SPACED" > /dev/null
check "a mount on a path with a space is listed" mounted "$SPACED"
expect_eq "its source names the device whose path holds a comma" "$(findmnt -no SOURCE "$SPACED")" "dpfs:$COMMA_DEV"
spaced_watch=$(watch_of "$SPACED")
check "has its watch" test -n "$spaced_watch"
kill -KILL "$(daemon_pid "$SPACED")"
check "a SIGKILL leaves it dead" dead_within "$SPACED"
# The mount shows dead before the watch has looked: its record is there once it ends.
check "the watch ends" gone_within "$spaced_watch"
check "having recorded it" grep -q "left its mount at $SPACED dead" "$COMMA_DEV/daemon.log"
check "dpfs unmount takes it down" "$DPFS" unmount "$SPACED"
check_fails "nothing is mounted there" mounted "$SPACED"

# A user's mount (fusermount3 mounts it; dpfs unmount takes it down through fusermount3 too).
mkdir -p "$USER_MNT"
printf '1234\n' > "$USER_WORK/pass"
chmod 600 "$USER_WORK/pass"
chmod 755 "$WORK"
chown -R 65534:65534 "$USER_WORK"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$USER_WORK" "$@"; }
as_nobody "$DPFS" init "$USER_WORK/device" --passcode-file "$USER_WORK/pass" \
    --secret-store "file:$USER_WORK/secrets" --create > /dev/null || fail "init as nobody"
if as_nobody "$DPFS" mount "$USER_WORK/device" "$USER_MNT" > /dev/null; then
    user_daemon=$(pgrep -u 65534 -f "^dpfs mount $USER_WORK/device " | head -1)
    user_watch=$(watch_of "$USER_MNT")
    expect_eq "a user's mount has its watch, as that user" "$(ps -o uid= -p "$user_watch" | tr -d ' ')" "65534"
    check "a SIGKILL of the user's daemon" kill -KILL "$user_daemon"
    check "leaves its mount dead" dead_within "$USER_MNT" as_nobody
    check "and the watch ends" gone_within "$user_watch"
    check_error "the user is told the daemon died" "has died" as_nobody "$DPFS" status "$USER_MNT"
    check "the user's dpfs unmount takes it down" as_nobody "$DPFS" unmount "$USER_MNT"
    check_fails "nothing is mounted" mounted "$USER_MNT"
    # fusermount3 still mounting when the daemon is killed: held before its mount(2)
    # (strace delays the call by 10 s; -u keeps it set-user-ID), it mounts after the
    # daemon's end and fails to hand over the connection, leaving the mount dead. The
    # watch, told no mount, records the death; the next mount replaces the dead one.
    strace -f -qq -o "$WORK/held.strace" -u nobody -e trace=mount -e inject=mount:delay_enter=10000000 \
        env HOME="$USER_WORK" "$DPFS" mount "$USER_WORK/device" "$USER_MNT" --foreground > "$WORK/held.log" 2>&1 &
    tracer=$!
    held=""
    for _ in $(seq 300); do
        user_daemon=$(pgrep -P "$tracer" | head -1)
        [ -n "$user_daemon" ] && held=$(pgrep -P "$user_daemon" -x fusermount3) && break
        sleep 0.05
    done
    check "fusermount3 is held before mounting" test -n "$held"
    check_fails "and nothing is mounted yet" mounted "$USER_MNT"
    check "the daemon killed then" kill -KILL "$user_daemon"
    { wait "$tracer"; } 2>/dev/null   # strace follows fusermount3 and the watch to their end
    check "the mount fusermount3 made after it is dead" dead_within "$USER_MNT" as_nobody
    expect_eq "the watch, told no mount, records the death" "$(grep -c 'died while mounting' "$WORK/held.log")" "1"
    check "the next mount replaces it" as_nobody "$DPFS" mount "$USER_WORK/device" "$USER_MNT"
    check "and serves" as_nobody "$DPFS" status "$USER_MNT"
    check "and unmounts" as_nobody "$DPFS" unmount "$USER_MNT"
    check_fails "nothing is left mounted" mounted "$USER_MNT"
else
    fail "mount as nobody" "$(tail -2 "$USER_WORK/device/daemon.log" 2>/dev/null)"
fi
finish
