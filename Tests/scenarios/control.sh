#!/usr/bin/env bash
# SPEC §7: the control socket is 0600, checks the peer's uid, speaks framed,
# versioned requests, and answers malformed input with an error, never a crash.
source "$(dirname "$0")/lib.sh"

setup_device
SOCK=$(getfattr --absolute-names --only-values -n user.dpfs.control "$MNT")
[ -S "$SOCK" ] && pass "the mount root names its control socket" || fail "the mount root names its control socket" "$SOCK"
expect_eq "socket mode is 0600" "$(stat -c %a "$SOCK")" "600"

cat > "$WORK/frames.py" <<'PY'
import json, socket, struct, sys
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
    return json.loads(data[16:16 + n])

def frame(body, version=1, secrets=b"", magic=b"DPFC"):
    return magic + struct.pack(">HHII", version, 0, len(body), len(secrets)) + body + secrets

cases = {
    "not json": frame(b"{this is not json"),
    "unknown request": frame(json.dumps({"fly": {}}).encode()),
    "wrong version": frame(b'{"status":{}}', version=99),
    "bad magic": frame(b'{"status":{}}', magic=b"XXXX"),
    "huge length": b"DPFC" + struct.pack(">HHII", 1, 0, 0xFFFFFFF0, 0),
    "truncated frame": frame(b'{"status":{}}')[:20],
    "unlock without a passcode": frame(b'{"unlock":{}}'),
    "secret section lies": frame(b'{"unlock":{}}', secrets=struct.pack(">I", 5000) + b"12"),
}
for name, raw in cases.items():
    reply = exchange(raw)
    ok = reply is not None and reply.get("ok") is False and reply.get("error")
    print(("ok   " if ok else "FAIL ") + name + ": " + (reply or {}).get("error", "no reply"))
status = exchange(frame(b'{"status":{}}'))
print(("ok   " if status and status.get("ok") else "FAIL ") + "a good request after all that: " + str(status and status["status"]["state"]))
PY
while IFS= read -r line; do
    case "$line" in ok*) pass "${line#ok   }" ;; *) fail "${line#FAIL }" ;; esac
done < <(python3 "$WORK/frames.py" "$SOCK" 2>&1)
check "the daemon lives on" "$DPFS" status "$MNT"

# Another uid is refused, even with the socket's mode opened up.
chmod 755 "$(dirname "$SOCK")"; chmod 666 "$SOCK"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "
import socket, struct
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect('$SOCK')
body = b'{\"status\":{}}'
try:
    s.sendall(b'DPFC' + struct.pack('>HHII', 1, 0, len(body), 0) + body)
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
chmod 600 "$SOCK"; chmod 700 "$(dirname "$SOCK")"
case "$out" in *"permission denied"*) pass "another uid is refused by the peer check" ;;
               *) fail "another uid is refused by the peer check" "$out" ;; esac
check "still serving its owner" "$DPFS" status "$MNT"
finish
