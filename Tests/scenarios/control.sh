#!/usr/bin/env bash
# The control socket is 0600, checks the peer's uid, speaks framed,
# versioned requests, and answers malformed input with an error, never a crash; and
# the CLI sends nothing to a socket that is not its own mount's daemon (issue 12, 5).
source "$(dirname "$0")/lib.sh"

setup_device
SOCK=$(getfattr --absolute-names --only-values -n user.dpfs.control "$MNT")
[ -S "$SOCK" ] && pass "the mount root names its control socket" || fail "the mount root names its control socket" "$SOCK"
expect_eq "socket mode is 0600" "$(stat -c %a "$SOCK")" "600"

# The wire form and one request's exchange on a connection of its own, for the
# raw-frame checks below (python3 "$WORK/X.py" SOCKET).
cp "$(dirname "$0")/../tools/controlwire.py" "$WORK/controlwire.py"
cat > "$WORK/wire.py" <<'PY'
import socket, struct, sys
from controlwire import *
path = sys.argv[1]

def exchange(raw):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(raw)
    s.shutdown(socket.SHUT_WR)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    if len(data) < 16: return None
    n = struct.unpack(">I", data[8:12])[0]
    return unwire(data[16:16 + n])[0]

PY

cat > "$WORK/frames.py" <<'PY'
from wire import *

status = wire({"status": {}})
cases = {
    "not a message": frame(b"{this is not a message"),
    "unknown request": frame(wire({"fly": {}})),
    "a request of the wrong shape": frame(wire({"lock": {"now": "yes"}})),
    "nested too deeply": frame(b"\x08\x01" * 40 + b"\x00"),
    "a count beyond the message": frame(b"\x09" + varint(1 << 40)),
    "bytes after the message": frame(status + b"\x00"),
    "wrong version": frame(status, version=99),
    "the JSON of version 1": frame(b'{"status":{}}', version=1),
    "bad magic": frame(status, magic=b"XXXX"),
    "huge length": b"DPFC" + struct.pack(">HHII", 2, 0, 0xFFFFFFF0, 0),
    "truncated frame": frame(status)[:18],
    "unlock without a passcode": frame(wire({"unlock": {}})),
    "secret section lies": frame(wire({"unlock": {}}), secrets=struct.pack(">I", 5000) + b"12"),
    # A request holds tens of values: a 16 MB map of eight million empty entries is
    # refused on its count, not built (it took seconds of CPU and a gigabyte).
    "a map of eight million entries": frame(b"\x09" + varint(8388605) + b"\x00\x00" * 8388605),
    "a list of lists, 40000 values": frame(wire({"lock": [[None] * 200] * 200})),
    # An empty passcode is refused untried: it counts as no failed attempt.
    "an empty passcode": frame(wire({"unlock": {}}), secrets=struct.pack(">I", 0)),
    "an empty current passcode": frame(wire({"passcode": {"_0": "change"}}),
                                       secrets=struct.pack(">I", 0) + struct.pack(">I", 4) + b"5678"),
    "an empty passcode answer": frame(wire({"biometry": {"_0": {"respond": {"answer": "passcode", "times": 1}}}}),
                                      secrets=struct.pack(">I", 0)),
}
for name, raw in cases.items():
    reply = exchange(raw)
    ok = isinstance(reply, dict) and reply.get("ok") is False and reply.get("error")
    print(("ok   " if ok else "FAIL ") + name + ": " + str((reply or {}).get("error", "no reply")))
good = exchange(frame(status))
print(("ok   " if good and good.get("ok") else "FAIL ") + "a good request after all that: " + str(good and good["status"]["state"]))
PY
while IFS= read -r line; do
    case "$line" in ok*) pass "${line#ok   }" ;; *) fail "${line#FAIL }" ;; esac
done < <(cd "$WORK" && python3 frames.py "$SOCK" 2>&1)
check "the daemon lives on" "$DPFS" status "$MNT"
attempts() { "$DPFS" status "$MNT" --json | sed -n 's/.*"failedAttempts":\([0-9]*\).*/\1/p'; }
expect_eq "the empty passcodes counted no failed attempt" "$(attempts)" "0"
# The daemon's peak memory (VmHWM), in kB.
hwm() { sed -n 's/^VmHWM:[^0-9]*\([0-9]*\) kB/\1/p' "/proc/$(daemon_pid)/status"; }
# What the bodies above cost it: the map is refused on its count, its 16 MB read
# only as it came. (It peaked at about a gigabyte.)
expect_eq "the daemon's peak memory stayed under 100 MB" "$([ "$(hwm)" -lt 102400 ] && echo yes || echo "no: $(hwm) kB")" "yes"

# A header alone commits nothing for the body it announces: sixty connections each
# announcing 16 MiB and sending nothing more (it took 16 MiB each at once).
python3 - "$SOCK" > "$WORK/headers.out" 2>&1 <<'PY' &
import socket, struct, sys, time
held = []
for _ in range(60):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(b"DPFC" + struct.pack(">HHII", 2, 0, 16 << 20, 0))
    held.append(s)
print("sent", flush=True)
time.sleep(30)
PY
headers=$!
check "sixty headers of 16 MiB are sent" within 30 grep -q sent "$WORK/headers.out"
sleep 2
expect_eq "they cost the daemon no 16 MiB each" "$([ "$(hwm)" -lt 102400 ] && echo yes || echo "no: $(hwm) kB")" "yes"
kill "$headers" 2>/dev/null; wait "$headers" 2>/dev/null
check "the daemon serves on" "$DPFS" status "$MNT"

# An item the store takes is one it can return (dpfs(1), "The keychain"): a
# label of 16 MiB less 200 bytes was taken, and then no find could return the item.
unlock_device
cat > "$WORK/sizes.py" <<'PY'
from wire import *

def add(attributes, data=b""):
    body = wire({"keychain": {"_0": {"operation": "add", "attributes": attributes, "updateAttributes": {}}}})
    return exchange(frame(body, secrets=struct.pack(">I", len(data)) + data))

reply = add({"service": "near", "label": "x" * ((16 << 20) - 200)})
print("huge label:", (reply or {}).get("keychain", {}).get("status"), (reply or {}).get("keychain", {}).get("message"))
reply = add({"service": "near", "label": "x" * 65537})
print("label one byte over:", (reply or {}).get("keychain", {}).get("status"))
reply = add({"service": "longest", "label": "x" * 65536}, b"d" * 65536)
print("longest label, largest data:", (reply or {}).get("keychain", {}).get("status"))
# More data in all than one reply carries.
for index in range(270):
    reply = add({"service": "bulk", "account": str(index)}, b"d" * 65536)
    if (reply or {}).get("keychain", {}).get("status") != 0:
        print("bulk add", index, "failed:", reply); break
else:
    print("bulk added")
PY
(cd "$WORK" && python3 sizes.py "$SOCK") > "$WORK/sizes.out" 2>&1
log "$(tr '\n' ';' < "$WORK/sizes.out")"
check "a label of 16 MiB is refused with errSecParam" grep -q "^huge label: -50 label is 16777016 bytes long" "$WORK/sizes.out"
check "so is one of 64 KiB and a byte" grep -q "^label one byte over: -50" "$WORK/sizes.out"
check "an item at every limit is taken" grep -q "^longest label, largest data: 0" "$WORK/sizes.out"
check_error "nothing was added" "errSecItemNotFound" "$DPFS" keychain find "$MNT" --service near --return attributes
check "the item at every limit comes back" "$DPFS" keychain find "$MNT" --service longest --return both
check "270 items of 64 KiB are added" grep -q "^bulk added" "$WORK/sizes.out"
check_error "a find of all their data is refused, with a status and a hint" \
    "errSecAllocate (-108): the matching items would not fit in one reply.*narrow the query" \
    "$DPFS" keychain find "$MNT" --service bulk --limit all
expect_eq "their attributes come back" \
    "$("$DPFS" keychain find "$MNT" --service bulk --limit all --return attributes | grep -c '^account: ')" "270"
expect_eq "so does one item's data" "$("$DPFS" keychain find "$MNT" --service bulk | wc -c)" "65536"

# The keychain fields of the wire in raw frames (Tests/tools/controlwire.py): values
# given as bytes and a generic given as text come back in their own maps, and a
# persistent ref names the item.
cat > "$WORK/typed.py" <<'PY'
from wire import *

def call(data=None, **fields):
    return exchange(keychain_frame(data, **fields))

added = call(b"secret", operation="add", attributes={"service": "typed"},
             dataAttributes={"account": b"\xff\x00", "label": b"L"}, textAttributes={"generic": "g"},
             returning="attributes")
print("add:", (added or {}).get("keychain", {}).get("status"))
found = call(operation="find", attributes={"service": "typed", "label": "L", "generic": "67"},
             dataAttributes={"account": b"\xff\x00"}, returning="both")
item = (items(found) or [{}])[0]
print("types:", item.get("account") == b"\xff\x00", item.get("label") == b"L", item.get("generic") == "g",
      item.get("data") == b"secret")
ref = item.get("persistentRef", "")
print("ref:", persistent_ref(ref)[0] if persistent_ref(ref) else None)
by_ref = call(operation="find", attributes={"persistentRef": ref}, returning="data")
print("by ref:", [i.get("data") for i in items(by_ref)] == [b"secret"])
updated = call(b"new", operation="update", attributes={"service": "typed"},
               updateAttributes={}, updateDataAttributes={"comment": b"c"})
print("update:", (updated or {}).get("keychain", {}).get("status"))
again = call(operation="find", attributes={"service": "typed", "comment": "c"}, returning="both")
print("updated:", [(i.get("comment"), i.get("data")) for i in items(again)] == [(b"c", b"new")])
PY
(cd "$WORK" && python3 typed.py "$SOCK") > "$WORK/typed.out" 2>&1
log "$(tr '\n' ';' < "$WORK/typed.out")"
check "an item with typed attributes is added in a raw frame" grep -q "^add: 0" "$WORK/typed.out"
check "they come back in their types" grep -q "^types: True True True True" "$WORK/typed.out"
check "its persistent ref names its class" grep -q "^ref: genp" "$WORK/typed.out"
check "and finds it" grep -q "^by ref: True" "$WORK/typed.out"
check "an update gives new data and a comment as bytes" grep -q "^update: 0" "$WORK/typed.out"
check "which a find by its text sees" grep -q "^updated: True" "$WORK/typed.out"
"$DPFS" keychain find "$MNT" --service typed --return attributes > "$WORK/typed.attrs" 2>&1
log "$(tr '\n' ';' < "$WORK/typed.attrs")"
check "the command line lists an attribute given as bytes, losslessly" \
    grep -qx "account.base64: /wA=" "$WORK/typed.attrs"
check "one given as printable bytes as text" grep -qx "comment: c" "$WORK/typed.attrs"
check "and a generic given as text" grep -qx "generic: g" "$WORK/typed.attrs"

# Another uid is refused, even with the socket's mode opened up. It reaches the socket
# through a second link in a directory of its own: the sockets' directory is every
# mount's, and opening it up would make the other mounts' commands refuse it.
PEER_DIR=$(mktemp -d "$(dirname "$(dirname "$SOCK")")/dpfs-peer.XXXXXX")
chmod 755 "$PEER_DIR"; ln "$SOCK" "$PEER_DIR/sock"; chmod 666 "$SOCK"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "
import socket, struct
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect('$PEER_DIR/sock')
body = b'\\x09\\x01\\x06status\\x09\\x00'
try:
    s.sendall(b'DPFC' + struct.pack('>HHII', 2, 0, len(body), 0) + body)
except BrokenPipeError:
    pass  # the daemon answers and hangs up at once
reply = b''
while True:  # the header and the body may come in separate reads
    try:
        chunk = s.recv(4096)
    except ConnectionResetError:
        break
    if not chunk:
        break
    reply += chunk
print(reply[16:].decode(errors='replace'))" 2>&1)
chmod 600 "$SOCK"; rm -rf "$PEER_DIR"
case "$out" in *"permission denied"*) pass "another uid is refused by the peer check" ;;
               *) fail "another uid is refused by the peer check" "$out" ;; esac
check "still serving its owner" "$DPFS" status "$MNT"

# --- issue 12, attack 5: a stranger's directory names a socket the stranger listens on.
# nobody makes a directory whose user.dpfs.control names nobody's own socket; root's
# `dpfs unlock DIR` must refuse before it connects, and the socket receives nothing.
EVIL=$(mktemp -d /var/tmp/dpfs-stranger.XXXXXX)
chmod 755 "$EVIL"; chown 65534:65534 "$EVIL"
FAKE_PID=""
scenario_cleanup() {
    [ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null && wait "$FAKE_PID" 2>/dev/null
    rm -rf "$EVIL"
    # The stand-ins for a reused pid and a live daemon, at the end (their pids, their sockets).
    local pid
    for pid in ${REUSED:-} ${NEWER:-}; do kill "$pid" 2>/dev/null; rm -f "/run/dpfs/$pid.sock"; done
}
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
cat > "$EVIL/server.py" <<'PY'
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
connections = received = 0
def record():
    with open(log + ".tmp", "w") as f: f.write("%d %d\n" % (connections, received))
    os.rename(log + ".tmp", log)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path); os.chmod(path, 0o777); listener.listen(8)
record()
while True:
    conn, _ = listener.accept()
    connections += 1; record()
    conn.settimeout(2)
    try:
        while True:
            chunk = conn.recv(65536)
            if not chunk: break
            received += len(chunk); record()
    except OSError:
        pass
    conn.close()
PY
nobody mkdir "$EVIL/sandbox"
# setpriv execs python, so $! is the server's own pid (a shell function would fork).
setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$EVIL/server.py" "$EVIL/sock" "$EVIL/log" \
    >/dev/null 2>&1 &
FAKE_PID=$!
for _ in $(seq 300); do [ -s "$EVIL/log" ] && break; sleep 0.1; done
nobody setfattr -n user.dpfs.control -v "$EVIL/sock" "$EVIL/sandbox"
expect_eq "the stranger's directory names the stranger's socket" \
    "$(getfattr --absolute-names --only-values -n user.dpfs.control "$EVIL/sandbox" 2>/dev/null)" "$EVIL/sock"
check_error "unlock refuses the stranger's directory" \
    "$EVIL/sandbox is not a dpfs mount owned by you; refusing to send anything to it" \
    "$DPFS" unlock "$EVIL/sandbox" --passcode-file "$PASS"
for command in status lock restart events; do
    check_fails "$command refuses it too" timeout 10 "$DPFS" $command "$EVIL/sandbox"
done
check_fails "passcode change refuses it" \
    "$DPFS" passcode change "$EVIL/sandbox" --passcode-file "$PASS" --new-passcode-file "$PASS"
check_fails "keychain add refuses it" "$DPFS" keychain add "$EVIL/sandbox" --service x --data-file "$PASS"
ln -s "$EVIL/sandbox" "$WORK/link"
check_fails "so does a symlink to it" "$DPFS" unlock "$WORK/link" --passcode-file "$PASS"
expect_eq "the stranger's socket got no connection and no byte" "$(cat "$EVIL/log")" "0 0"

# A real mount of the caller still works, by any path that resolves to it.
check "unlock of the real mount" "$DPFS" unlock "$MNT" --passcode-file "$PASS"
expect_eq "status of the real mount" "$(state_of)" "unlocked"
ln -s "$MNT" "$WORK/mnt-link"
check "a symlink to the real mount works" "$DPFS" status "$WORK/mnt-link"

# The same stranger's socket named by a directory inside the real mount: not the
# mount's root, so refused too (any directory can answer the attribute).
mkdir -p "$MNT/Documents/trap"
setfattr -n user.dpfs.control -v "$EVIL/sock" "$MNT/Documents/trap" 2>/dev/null
check_fails "a directory inside the mount is not the mount" "$DPFS" unlock "$MNT/Documents/trap" --passcode-file "$PASS"
expect_eq "still no connection and no byte" "$(cat "$EVIL/log")" "0 0"
# The stranger's server does count what reaches it (so the zeros above mean something).
python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('$EVIL/sock'); s.sendall(b'x'); s.close()"
for _ in $(seq 300); do [ "$(cat "$EVIL/log")" = "1 1" ] && break; sleep 0.1; done
expect_eq "a byte sent to the stranger's socket is counted" "$(cat "$EVIL/log")" "1 1"

# Another user's dpfs mount is refused by the kernel's record of its owner: root's
# mount with allow_other, asked by nobody.
"$DPFS" unmount "$MNT"
MOUNT_ARGS="-o allow_other" mount_device
chmod 711 "$WORK"
out=$(nobody "$DPFS" status "$MNT" 2>&1)
chmod 700 "$WORK"
case "$out" in *"is not a dpfs mount owned by you"*"uid 0 as its owner"*) pass "another user's mount is refused: $out" ;;
               *) fail "another user's mount is refused" "$out" ;; esac
check "its owner still reaches it" "$DPFS" status "$MNT"

# A killed daemon's socket whose pid a later process was given: removed at the next
# mount all the same (that process started after the socket was made). A socket newer
# than its live process, as a running daemon's is, stays.
sleep 60 &
REUSED=$!
python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "/run/dpfs/$REUSED.sock"
touch -d '1 hour ago' "/run/dpfs/$REUSED.sock"
sleep 60 &
NEWER=$!
python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "/run/dpfs/$NEWER.sock"
"$DPFS" unmount "$MNT" && mount_device
check_fails "a dead daemon's socket is removed though its pid now names another process" test -e "/run/dpfs/$REUSED.sock"
check "a socket made after its process started stays" test -S "/run/dpfs/$NEWER.sock"

# Nor is an empty new passcode taken (the CLI refuses one): no passcode could unlock
# the device after it. Last, as it changed the passcode before.
SOCK=$(getfattr --absolute-names --only-values -n user.dpfs.control "$MNT")
out=$(cd "$WORK" && python3 -c 'from wire import *
print(exchange(frame(wire({"passcode": {"_0": "change"}}), secrets=struct.pack(">I", 4) + b"1234" + struct.pack(">I", 0))))' "$SOCK" 2>&1)
case "$out" in *"'ok': False"*"empty"*) pass "an empty new passcode is refused" ;;
               *) fail "an empty new passcode is refused" "$out" ;; esac
check "the passcode is still 1234" unlock_device
finish
