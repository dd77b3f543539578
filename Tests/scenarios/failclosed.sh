#!/usr/bin/env bash
# Fail closed (docs/security.md, "Fail closed"; dpfs(1), mount): a daemon killed with kill -9
# leaves its mount in place, dead: every path under it fails (ENOTCONN), for a shell
# whose cwd is inside, a file open for writing and a mapping too; nothing is created or
# written in the clear in the directory beneath; daemon.log records the death; `dpfs
# status` says what happened; `dpfs mount` (or `dpfs unmount`) takes the dead mount
# down, and everything fsynced before the kill reads back whole.
source "$(dirname "$0")/lib.sh"

holders=""
scenario_cleanup() {
    local pid
    for pid in $holders; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    return 0
}
mounted() { grep -qs " $MNT fuse" /proc/mounts; }
dead() { ! kill -0 "$1" 2>/dev/null; }
has_line() { grep -q "$1" "$2" 2>/dev/null; }

setup_device
unlock_device
D="$MNT/Documents"
head -c 300000 /dev/urandom > "$WORK/kept.bin"
cp "$WORK/kept.bin" "$D/kept.bin"
sync "$D/kept.bin"
printf 'complete and fsynced\n' > "$D/c.txt"
setfattr -n user.dpfs.protection -v complete "$D/c.txt"
sync "$D/c.txt"
head -c 8192 /dev/urandom > "$WORK/mapped.bin"
cp "$WORK/mapped.bin" "$D/mapped.bin"
sync "$D/mapped.bin"
mkdir "$D/sub"
GO="$WORK/go"

# A shell whose cwd is inside the mount, writing by name once told to.
bash -c 'cd "$1/sub" || exit 9; echo ready > "$2/shell.ready"
         while [ ! -e "$3" ]; do sleep 0.05; done
         { echo "diary: secret" > diary.txt; } 2> "$2/shell.err"; echo "$?" > "$2/shell.rc"' _ "$D" "$WORK" "$GO" &
holders="$holders $!"
# A file open for writing, and a mapping read before the kill and written after it.
python3 - "$D" "$WORK" "$GO" <<'PY' > "$WORK/holder.out" 2>&1 &
import mmap, os, sys, time
d, work, go = sys.argv[1:]
fd = os.open(f"{d}/held.txt", os.O_CREAT | os.O_WRONLY, 0o600)
os.write(fd, b"before the kill\n"); os.fsync(fd)
mfd = os.open(f"{d}/mapped.bin", os.O_RDWR)
m = mmap.mmap(mfd, 8192, mmap.MAP_SHARED)
_ = m[0:4096]   # the first page in the page cache
print("ready", flush=True)
while not os.path.exists(go): time.sleep(0.05)
def attempt(what, f):
    try: f(); print(what, "succeeded", flush=True)
    except OSError as e: print(what, "failed:", e.strerror, flush=True)
attempt("write", lambda: os.write(fd, b"secret written after the kill\n"))
attempt("fsync", lambda: os.fsync(fd))
def dirty_the_map():
    m[0:6] = b"SECRET"
    m.flush()
attempt("mmap", dirty_the_map)
PY
holders="$holders $!"
check "the holders are ready" within 60 has_line ready "$WORK/holder.out"
check "the shell is inside the mount" within 60 test -e "$WORK/shell.ready"

"$DPFS" events "$MNT" > "$WORK/events.out" 2> "$WORK/events.err" &
subscriber=$!
holders="$holders $subscriber"
daemon=$(daemon_pid)
check "kill -9 of the daemon" kill -KILL "$daemon"
check "the daemon is gone" within 60 dead "$daemon"
touch "$GO"
check "a subscriber's dpfs events ends" within 60 dead "$subscriber"
wait "$subscriber"
expect_eq "with status 1, not as at an unmount" "$?" "1"
# A subscriber that had not connected yet when the kill came hears it from the
# connection instead: both say the daemon died.
says_died() { grep -q -e "the daemon died" -e "the dpfs daemon of .* has died" "$1" || { cat "$1"; return 1; }; }
check "saying the daemon died" says_died "$WORK/events.err"

check "the mount stays in place" mounted
check_error "a write by path fails" "Transport endpoint is not connected" sh -c "echo secret > '$D/new.txt'"
check_error "a mkdir fails" "Transport endpoint is not connected" mkdir "$D/newdir"
check_error "a read fails" "Transport endpoint is not connected" cat "$D/kept.bin"
check_error "a listing fails" "Transport endpoint is not connected" ls "$MNT"
check_error "a stat fails" "Transport endpoint is not connected" stat "$D/kept.bin"
check "the shell inside is done" within 60 test -s "$WORK/shell.rc"
expect_eq "its write by name failed" "$(cat "$WORK/shell.rc")" "1"
check "with ENOTCONN" grep -q "Transport endpoint is not connected" "$WORK/shell.err"
check "the held file's write is done" within 60 has_line "^mmap" "$WORK/holder.out"
check "a write to the open file fails" grep -q "^write failed: Transport endpoint is not connected" "$WORK/holder.out"
check "so does its fsync" grep -q "^fsync failed" "$WORK/holder.out"
# A page already mapped takes the store in memory; its writeback fails (or the
# process gets SIGBUS where the page had to be read): never a success on disk.
check_fails "the mapping's flush does not succeed" grep -q "^mmap succeeded" "$WORK/holder.out"
log "the holder: $(tr '\n' ';' < "$WORK/holder.out")"

check "daemon.log records the death, with its level as every line" within 60 has_line " critical dpfs: .*the daemon (pid $daemon) died and left its mount" "$DEV/daemon.log"
check_error "dpfs status says the daemon died" "dpfs daemon of .* has died" "$DPFS" status "$MNT"
check_error "dpfs lock too" "has died" "$DPFS" lock "$MNT"

out=$("$DPFS" mount "$DEV" "$MNT" 2>&1)
expect_eq "dpfs mount takes the dead mount down and mounts" "$?" "0"
case "$out" in *"took down the dead mount"*) pass "and says so" ;; *) fail "and says so" "$out" ;; esac
check "the device is unlocked again" unlock_device
check "what was fsynced reads whole" cmp "$WORK/kept.bin" "$D/kept.bin"
expect_eq "the complete file too" "$(cat "$D/c.txt")" "complete and fsynced"
expect_eq "the open file holds what was fsynced" "$(cat "$D/held.txt")" "before the kill"
check "the mapped file holds what it held" cmp "$WORK/mapped.bin" "$D/mapped.bin"
check_fails "nothing written after the kill was created" test -e "$D/sub/diary.txt"
check_fails "by path either" test -e "$D/new.txt"

"$DPFS" unmount "$MNT"
expect_eq "nothing landed in the directory beneath the mount" "$(ls -A "$MNT")" ""
check_fails "no plaintext in the device directory" grep -rqa "secret written after the kill\|diary: secret\|SECRET" "$DEV"

# dpfs unmount takes a dead mount down too, also with a shell still inside it.
mount_device
daemon=$(daemon_pid)
bash -c 'cd "$1" && while :; do sleep 0.2; done' _ "$D" &
inside=$!
holders="$holders $inside"
cwd_is() { [ "$(readlink "/proc/$1/cwd")" = "$2" ]; }
check "a shell is inside" within 60 cwd_is "$inside" "$D"
kill -KILL "$daemon"
check "the daemon is gone" within 60 dead "$daemon"
out=$("$DPFS" unmount "$MNT" 2>&1)
expect_eq "dpfs unmount takes the dead mount down" "$?" "0"
case "$out" in *"had died; its dead mount is taken down"*) pass "and says so" ;; *) fail "and says so" "$out" ;; esac
check_fails "the mount is gone" mounted
expect_eq "and the directory beneath is empty" "$(ls -A "$MNT")" ""
check_error "dpfs unmount again: nothing is mounted" "not a mounted dpfs sandbox" "$DPFS" unmount "$MNT"

# A command under way when the daemon dies says that it died, as `dpfs status` then
# does, not "the connection closed" (unlock) or "Software caused connection abort"
# (protection set). The unlock reads its passcode from a fifo once it has connected
# (and asked the daemon its pid): the writer, opened once the command opens the fifo,
# gives the passcode when told to.
passcode_writer() {  # fifo go: opens the fifo, says so, writes the passcode once go exists
    python3 - "$1" "$2" "$PASS" <<'PY' &
import os, sys, time
fifo, go, passcode = sys.argv[1:]
fd = os.open(fifo, os.O_WRONLY)
open(fifo + ".opened", "w").close()
while not os.path.exists(go): time.sleep(0.05)
os.write(fd, open(passcode, "rb").read())
os.close(fd)
PY
    holders="$holders $!"
}
# First killed while it works on the request (the command then reads the end of the
# connection), then before the command sends it (its write then fails).
for when in during before; do
    mount_device
    daemon=$(daemon_pid)
    fifo="$WORK/passcode-$when.fifo"
    mkfifo -m 600 "$fifo"
    passcode_writer "$fifo" "$WORK/go-$when"
    "$DPFS" unlock "$MNT" --passcode-file "$fifo" > /dev/null 2> "$WORK/unlock-$when.err" &
    unlocker=$!
    holders="$holders $unlocker"
    check "unlock ($when): the command has connected" within 60 test -e "$fifo.opened"
    if [ "$when" = during ]; then
        kill -STOP "$daemon"
        touch "$WORK/go-$when"
        sleep 1  # the command sends its request, which the stopped daemon never answers
        kill -KILL "$daemon"
    else
        kill -KILL "$daemon"
        check "unlock ($when): the daemon is gone" within 60 dead "$daemon"
        touch "$WORK/go-$when"
    fi
    check "unlock ($when): the command ends" within 60 dead "$unlocker"
    wait "$unlocker"
    expect_eq "unlock ($when): with status 1" "$?" "1"
    check "unlock ($when): saying the daemon died" grep -q "the dpfs daemon of .* has died" "$WORK/unlock-$when.err"
    log "unlock ($when): $(cat "$WORK/unlock-$when.err")"
done

# A protection set waiting on the stopped daemon when it is killed.
mount_device
unlock_device > /dev/null
daemon=$(daemon_pid)
touch "$D/protected.txt"
kill -STOP "$daemon"
"$DPFS" protection set complete "$D/protected.txt" 2> "$WORK/protection.err" &
setter=$!
holders="$holders $setter"
sleep 1  # its call is waiting on the stopped daemon
kill -KILL "$daemon"
check "protection set ends" within 60 dead "$setter"
wait "$setter"
expect_eq "protection set: with status 1" "$?" "1"
check "protection set: saying the daemon died" grep -q "the dpfs daemon of .* has died" "$WORK/protection.err"
log "protection set: $(cat "$WORK/protection.err")"
check_error "protection get after it says so too" "the dpfs daemon of .* has died" "$DPFS" protection get "$D/protected.txt"
"$DPFS" unmount "$MNT" > /dev/null

# A daemon stopped by a signal (a service's stop, a shutdown) with a complete file held
# open and mapped: it restarts the device first, taking every protected class and what
# the kernel cached of it away while it still serves; then it unmounts (lazily, the file
# being busy) and exits. The holder reads no plaintext after: its descriptor is dead,
# its mapping revoked (SIGBUS), whichever signal it was.
for sig in TERM INT HUP; do
    mount_device
    unlock_device >/dev/null
    printf 'STOPPED-BY-%s\n' "$sig" > "$D/stop.txt"
    setfattr -n user.dpfs.protection -v complete "$D/stop.txt"
    rm -f "$WORK/stop.out" "$WORK/stop.go" "$WORK/events.$sig" "$WORK/events.$sig.err"
    "$DPFS" events "$MNT" > "$WORK/events.$sig" 2> "$WORK/events.$sig.err" &
    watcher=$!
    holders="$holders $watcher"
    check "SIG$sig: a subscriber has subscribed" within 60 subscribed "$WORK/events.$sig.err"
    python3 - "$D/stop.txt" "$WORK/stop.go" <<'PY' > "$WORK/stop.out" 2>&1 &
import mmap, os, sys, time
path, go = sys.argv[1:]
fd = os.open(path, os.O_RDONLY)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
print("before:", os.pread(fd, 20, 0), m[:20], flush=True)
while not os.path.exists(go): time.sleep(0.05)
try: print("read after:", os.pread(fd, 20, 0), flush=True)
except OSError as e: print("read after failed:", e.strerror, flush=True)
# A revoked mapping ends the process with SIGBUS here.
print("mapping after:", m[:20], flush=True)
PY
    holder=$!
    holders="$holders $holder"
    check "SIG$sig: the holder read the file" within 60 has_line "^before: b'STOPPED" "$WORK/stop.out"
    daemon=$(daemon_pid)
    kill -"$sig" "$daemon"
    check "SIG$sig: the daemon exits" within 60 dead "$daemon"
    touch "$WORK/stop.go"
    check "SIG$sig: the holder is done" within 60 dead "$holder"
    wait "$holder" 2>/dev/null
    expect_eq "SIG$sig: its mapping is revoked (SIGBUS)" "$?" "$((128 + 7))"
    check "SIG$sig: its descriptor was read after" has_line "^read after" "$WORK/stop.out"
    check_fails "SIG$sig: and gave no plaintext" grep -q "^read after: b'STOPPED" "$WORK/stop.out"
    log "SIG$sig holder: $(tr '\n' ';' < "$WORK/stop.out")"
    check "SIG$sig: subscribers heard the restart" within 60 has_line '"event":"restart"' "$WORK/events.$sig"
    check "SIG$sig: daemon.log says why" has_line "signal .*: the device restarts" "$DEV/daemon.log"
    check_fails "SIG$sig: the mount is gone" mounted
    kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
done

# The mount taken from its mount point by another hand (fusermount3 -u -z) while a file
# is held open: no dpfs command can find the daemon to lock it any more, so it restarts
# the device: the holder's reads of a complete file fail (EPERM) instead of going on.
mount_device
unlock_device >/dev/null
printf 'DETACHED-SECRET\n' > "$D/detached.txt"
setfattr -n user.dpfs.protection -v complete "$D/detached.txt"
rm -f "$WORK/detach.out" "$WORK/detach.stop"
python3 - "$D/detached.txt" "$WORK/detach.stop" <<'PY' > "$WORK/detach.out" 2>&1 &
import os, sys, time
path, stop = sys.argv[1:]
fd = os.open(path, os.O_RDONLY)
while not os.path.exists(stop):
    try: print("read:", os.pread(fd, 15, 0), flush=True)
    except OSError as e: print("read failed:", e.strerror, flush=True)
    time.sleep(0.1)
PY
holder=$!
holders="$holders $holder"
check "the holder reads the file" within 60 has_line "^read: b'DETACHED" "$WORK/detach.out"
daemon=$(daemon_pid)
check "fusermount3 -u -z takes the busy mount away" fusermount3 -u -z "$MNT"
check "the holder's reads then fail" within 60 has_line "^read failed: Operation not permitted" "$WORK/detach.out"
check "daemon.log says why" has_line "no dpfs command can lock it now" "$DEV/daemon.log"
check "the daemon is still there for the holder" kill -0 "$daemon"
touch "$WORK/detach.stop"; wait "$holder" 2>/dev/null
check "once the file is closed the daemon ends" within 60 dead "$daemon"
finish
