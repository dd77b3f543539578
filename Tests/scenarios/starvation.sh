#!/usr/bin/env bash
# The owner's lock always reaches the daemon (docs/security.md, "Nothing keeps the
# lock out"): the daemon answers its control socket again once it has run out of
# descriptors or of threads; an app's requests, however slow, never delay the owner's,
# nor do its connections, however many, take the descriptors the mount and the owner
# need; a client that never reads its reply is dropped; a mount table that cannot be
# read for want of descriptors is not taken for a detached mount; and a grace period
# ends on time though no thread can start.
source "$(dirname "$0")/lib.sh"

OTHER="$WORK/other"
USER_WORK="$WORK/user"
USER_MNT="$USER_WORK/mnt"
holder=""
app=""
dblock=""
user_daemon=""
scenario_cleanup() {
    local pid
    for pid in $holder $app $dblock; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    [ -n "${daemon:-}" ] && [ -n "${soft_before:-}" ] && prlimit --pid "$daemon" --nofile="$soft_before:" 2>/dev/null
    mountpoint -q "$OTHER" 2>/dev/null && umount "$OTHER"
    if grep -qs " $USER_MNT fuse" /proc/mounts; then
        as_user "$DPFS" unmount "$USER_MNT" 2>/dev/null || fusermount3 -uz "$USER_MNT" 2>/dev/null
    fi
    if [ -n "$user_daemon" ] && kill -0 "$user_daemon" 2>/dev/null; then kill -9 "$user_daemon"; fi
    return 0
}
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$USER_WORK" "$@"; }

# The control frames (Tests/tools/controlwire.py), for the clients below.
cp "$(dirname "$0")/../tools/controlwire.py" "$WORK/frames.py"
export PYTHONPATH="$WORK"

setup_device
unlock_device
daemon=$(daemon_pid)
SOCK=$(getfattr --absolute-names --only-values -n user.dpfs.control "$MNT")
LOG="$DEV/daemon.log"
soft_before=$(prlimit --pid "$daemon" --nofile --noheadings --output SOFT | tr -d ' ')
# The lowest descriptor number the daemon has free: a limit there leaves it none.
lowest_free() { ls "/proc/$daemon/fd" | sort -n | awk 'BEGIN {n = 0} $1 != n {exit} {n++} END {print n}'; }
has_line() { grep -q -e "$1" "$LOG" 2>/dev/null; }
state_is() { [ "$(state_of)" = "$1" ]; }

# --- A mount table read while no descriptor is free fails: that is not "unmounted".
# The daemon watches the table for a mount taken from its mount point (DetachWatch);
# it used to take the failed read for an empty table and restart the device.
mkdir "$OTHER"
prlimit --pid "$daemon" --nofile="$(lowest_free):"
mount -t tmpfs -o size=1m dpfs-test "$OTHER" && umount "$OTHER"   # the table changes
check "a mount table it cannot read is noted" within 30 has_line "cannot read the mount table"
prlimit --pid "$daemon" --nofile="$soft_before:"
# The restart came 2 s after the change, if it came: this waits out a quiet spell.
check_fails "and not taken for a detach" within 5 has_line "was taken from"
expect_eq "the device is still unlocked" "$(state_of)" "unlocked"

# --- A client that never reads its reply is dropped after 30 s, its reply with it: it
# held a thread and the reply for as long as it lived.
state_is unlocked || unlock_device > /dev/null   # each part on its own, whatever the last did
head -c 60000 /dev/urandom > "$WORK/big"
chmod 600 "$WORK/big"   # a data file others may read is refused
for i in $(seq 24); do "$DPFS" keychain add "$MNT" --service big --account "a$i" --data-file "$WORK/big" > /dev/null; done
cat > "$WORK/never_reads.py" <<'PY'
import select, socket, sys, time
from frames import request_frame, keychain, connect
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(sys.argv[1])
s.sendall(request_frame(keychain(operation="find", attributes={"service": "big"}, limit="all", returning="data")))
start = time.monotonic()
poller = select.poll()
poller.register(s, select.POLLRDHUP)
if not poller.poll(100_000):
    print("still connected after 100 s"); sys.exit(1)
waited = time.monotonic() - start
data = b""
while True:
    chunk = s.recv(1 << 20)
    if not chunk: break
    data += chunk
whole = 16 + int.from_bytes(data[8:12], "big") if len(data) >= 16 else 0
print("dropped after %d s with %d of %d bytes" % (waited, len(data), whole))
sys.exit(0 if len(data) < whole and waited >= 20 else 1)
PY
check "a reader that never reads its 1.4 MB reply is dropped after 30 s" python3 "$WORK/never_reads.py" "$SOCK"
check "the daemon still answers" "$DPFS" status "$MNT"

# --- An app whose requests keep the daemon busy does not delay the owner's lock. Its
# requests are slow here because the keychain database's write lock is held elsewhere:
# each add waits out SQLite's 10 s busy timeout on a thread of the daemon's.
state_is unlocked || unlock_device > /dev/null
python3 -c "
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute('BEGIN IMMEDIATE')
open(sys.argv[2], 'w').close()
time.sleep(600)" "$DEV/keychain.sqlite" "$WORK/dblocked" &
dblock=$!
check "the keychain database is held" within 30 test -e "$WORK/dblocked"
cat > "$WORK/starve.py" <<'PY'
import os, sys, threading
from frames import request_frame, keychain, connect, reply
path = os.environ["DPFS_CONTROL_SOCKET"]
def loop(i):
    s = connect(path)
    n = 0
    while True:
        n += 1
        s.sendall(request_frame(keychain(operation="add", attributes={"service": "starve", "account": "%d-%d" % (i, n)})))
        if reply(s) is None: return
threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(6)]
for t in threads: t.start()
print("started", flush=True)
for t in threads: t.join()
PY
"$DPFS" run "$MNT" -- python3 -c "$(cat "$WORK/frames.py" "$WORK/starve.py" | grep -v '^from frames')" \
    > "$WORK/starve.out" 2>&1 &
app=$!
check "the app sends its requests on six connections" within 30 grep -q started "$WORK/starve.out"
check "the owner's lock --now answers at once beside them (10 s deadline)" timeout 10 "$DPFS" lock "$MNT" --now
expect_eq "locked" "$(state_of)" "locked"
kill "$app" "$dblock"; wait "$app" "$dblock" 2>/dev/null; app=""; dblock=""

# --- Out of descriptors, the control socket turns connections away (one line in the
# log says so) and accepts again once descriptors are free; it used to stop accepting
# for good, the mount serving on, never to be locked again.
unlock_device > /dev/null
limit=$(( $(lowest_free) + 8 ))
prlimit --pid "$daemon" --nofile="$limit:"
cat > "$WORK/holder.py" <<'PY'
import signal, socket, sys
held = []
for _ in range(60):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(sys.argv[1])
        held.append(s)
    except OSError:
        s.close()   # the listener's backlog is full
print(len(held), flush=True)
signal.pause()
PY
python3 "$WORK/holder.py" "$SOCK" > "$WORK/held" &
holder=$!
descriptors_gone() { [ "$(lowest_free)" -ge "$limit" ]; }
check "the daemon runs out of descriptors" within 30 descriptors_gone
# Descriptors back before the connections close: closing them would free as many as
# the backlog then fills again, a second shortage.
prlimit --pid "$daemon" --nofile="$soft_before:"
kill "$holder"; wait "$holder" 2>/dev/null; holder=""
check "lock --now answers once descriptors are free again" timeout 30 "$DPFS" lock "$MNT" --now
expect_eq "locked after the shortage" "$(state_of)" "locked"
expect_eq "one line in daemon.log says the control socket ran short" "$(grep -c "cannot accept" "$LOG")" "1"

# --- An app cannot take the daemon's descriptors: one app socket holds at most an
# eighth of the daemon's descriptor limit in connections (all app sockets a
# quarter); one more is refused as it comes, and daemon.log says so once. The
# mount's opens and the owner's lock go on. An app used to open connections until
# the daemon had no descriptor left, and then a file open through the mount failed.
unlock_device > /dev/null
echo "still readable" > "$WORK/readable"
cp "$WORK/readable" "$MNT/Documents/readable.txt"
limit=$(( $(lowest_free) + 200 ))
prlimit --pid "$daemon" --nofile="$limit:"
cat > "$WORK/flood.py" <<'PY'
import os, signal, socket, struct, sys
from frames import request_frame, reply, unwire
path = os.environ["DPFS_CONTROL_SOCKET"]
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # A connect waits for room in the backlog, 5 s at most (settimeout would not wait).
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 5, 0))
    try:
        s.connect(path)
    except OSError:
        break   # the daemon takes no more: its backlog stays full
    held.append(s)
answered = refused = 0
refusal = ""
for s in held:
    try:
        s.sendall(request_frame({"status": {}}))
    except OSError:
        pass   # closed already: its refusal waits to be read
    try:
        data = reply(s)
    except OSError:
        data = None
    answer = unwire(data[16:])[0] if data else {}
    if answer.get("ok"): answered += 1
    else: refused += 1; refusal = answer.get("error", "closed")
print("connected %d answered %d refused %d: %s" % (len(held), answered, refused, refusal), flush=True)
signal.pause()
PY
flood() {
    rm -f "$WORK/flood.out"
    "$DPFS" run "$MNT" -- python3 -c "$(cat "$WORK/frames.py" "$WORK/flood.py" | grep -v '^from frames')" 400 \
        > "$WORK/flood.out" 2>&1 &
    app=$!
    check "$1" within 60 grep -q connected "$WORK/flood.out"
    log "$(cat "$WORK/flood.out")"
}
flood_count() { sed -n "s/.* $1 \([0-9]*\).*/\1/p" "$WORK/flood.out"; }
flood "an app opens 400 connections to its socket"
expect_eq "a file opens through the mount meanwhile" "$(cat "$MNT/Documents/readable.txt" 2>&1)" "still readable"
check "lock --now answers meanwhile" timeout 30 "$DPFS" lock "$MNT" --now
expect_eq "locked beside the app's connections" "$(state_of)" "locked"
first=$(flood_count answered)
expect_eq "the app is answered on at most an eighth of the descriptor limit" \
    "$([ "${first:-0}" -ge 1 ] && [ "$first" -le $(( limit / 8 )) ] && echo yes || echo "no: ${first:-none} of limit $limit")" "yes"
expect_eq "its connections beyond are refused, saying why" \
    "$(grep -c "connected 400 .* refused $(( 400 - ${first:-0} )): .*connections open" "$WORK/flood.out")" "1"
expect_eq "one line in daemon.log says so" "$(grep -c "connections open, as many as" "$LOG")" "1"
kill "$app"; wait "$app" 2>/dev/null; app=""
# The places of a closed app's connections are free again.
flood "a new app session opens 400 connections too"
expect_eq "and is answered on as many" "$(flood_count answered)" "$first"
kill "$app"; wait "$app" 2>/dev/null; app=""
prlimit --pid "$daemon" --nofile="$soft_before:"

# --- Out of threads (a user's daemon under RLIMIT_NPROC; root is never held to it):
# two frames that arrive in parts used to make both workers hand their places to
# threads that could not start, and then leave: no worker was left, and no command
# was ever answered again. A worker that gets no replacement keeps its place; the
# last one free stays free.
mkdir -p "$USER_MNT"
printf '1234\n' > "$USER_WORK/pass"
chmod 600 "$USER_WORK/pass"
chmod 755 "$WORK"
chown -R 65534:65534 "$USER_WORK"
cp "$WORK/frames.py" "$USER_WORK/frames.py"
as_user "$DPFS" init "$USER_WORK/device" --passcode-file "$USER_WORK/pass" \
    --secret-store "file:$USER_WORK/secrets" --create > /dev/null || fail "init as nobody"
as_user "$DPFS" mount "$USER_WORK/device" "$USER_MNT" --grace-period 2 > /dev/null || fail "mount as nobody"
user_daemon=$(as_user "$DPFS" status "$USER_MNT" --json | json_field pid)
USER_SOCK=$(as_user getfattr --absolute-names --only-values -n user.dpfs.control "$USER_MNT")
control_threads() { grep -lx dpfs-control /proc/"$user_daemon"/task/*/comm 2>/dev/null | wc -l; }
# As the daemon's user: root may lack CAP_SYS_RESOURCE in a container.
nproc_before=$(as_user prlimit --pid "$user_daemon" --nproc --noheadings --output SOFT | tr -d ' ')
as_user prlimit --pid "$user_daemon" --nproc=1:
cat > "$USER_WORK/parts.py" <<'PY'
import socket, sys, time
from frames import request_frame, connect, reply
whole = request_frame({"status": {}})
clients = [connect(sys.argv[1]) for _ in range(2)]
for s in clients: s.sendall(whole[:10])
time.sleep(1)   # the daemon takes up the first parts meanwhile
for s in clients:
    s.settimeout(60)
    try:
        s.sendall(whole[10:])
        print("answered" if reply(s) else "closed")
    except OSError as error:
        print("closed:", error)
PY
log "two status frames in parts, no thread can start: $(as_user env PYTHONPATH="$USER_WORK" python3 "$USER_WORK/parts.py" "$USER_SOCK" | tr '\n' ' ')"
as_user prlimit --pid "$user_daemon" --nproc="$nproc_before:"
check "threads back, status answers" as_user timeout 30 "$DPFS" status "$USER_MNT"
check "and unlock" as_user timeout 30 "$DPFS" unlock "$USER_MNT" --passcode-file "$USER_WORK/pass"
check "and lock --now" as_user timeout 30 "$DPFS" lock "$USER_MNT" --now
[ "$(control_threads)" -ge 1 ] && pass "control workers are left ($(control_threads))" \
    || fail "control workers are left" "none"
check "daemon.log says a thread could not start" grep -q "cannot start a thread" "$USER_WORK/device/daemon.log"

# --- Out of threads, a lock with a grace period still takes complete's key when the
# period ends, and what a handle opened before holds with it: the wipe used to wait for
# a libdispatch thread, so `dpfs lock` went unanswered and the file stayed readable for
# as long as the user's processes held every thread. The daemon's deadline thread runs
# from the mount on; nothing here asks for status, which would carry the lock out too.
check "unlock again" as_user timeout 30 "$DPFS" unlock "$USER_MNT" --passcode-file "$USER_WORK/pass"
HELD="$USER_MNT/Documents/held"
as_user sh -c 'printf "held secret" > "$1" && setfattr -n user.dpfs.protection -v complete "$1"' sh "$HELD" \
    || fail "a complete file as nobody"
cat > "$USER_WORK/held.py" <<'PY'
import errno, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
assert os.pread(fd, 64, 0) == b"held secret"
print("open", flush=True)
while not os.path.exists(sys.argv[2]): time.sleep(0.05)
end = time.monotonic() + 60
while time.monotonic() < end:
    try:
        os.pread(fd, 64, 0)
    except OSError as error:
        print("refused:", errno.errorcode[error.errno], flush=True); sys.exit(0)
    time.sleep(0.1)
print("still readable after 60 s", flush=True)
PY
as_user python3 "$USER_WORK/held.py" "$HELD" "$USER_WORK/locked" > "$WORK/held.out" 2>&1 &
app=$!
check "a handle is opened on it" within 30 grep -q open "$WORK/held.out"
as_user prlimit --pid "$user_daemon" --nproc=1:
check "lock with a 2 s grace period answers though no thread can start" as_user timeout 30 "$DPFS" lock "$USER_MNT"
as_user touch "$USER_WORK/locked"
cannot_read() { ! as_user cat "$HELD"; }
check "the file cannot be opened once the period is over" within 60 cannot_read
check "and the handle opened before reads nothing (EPERM)" within 60 grep -q "refused: EPERM" "$WORK/held.out"
wait "$app" 2>/dev/null; app=""
as_user prlimit --pid "$user_daemon" --nproc="$nproc_before:"
expect_eq "the user's device is locked" "$(as_user "$DPFS" status "$USER_MNT" --json | json_field state)" "locked"
check "the user's mount comes down" as_user "$DPFS" unmount "$USER_MNT"
finish
