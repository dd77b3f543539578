# The control socket's frames and body wire form (dpfs(5), "Control socket"), for the
# scenarios that talk to a daemon in raw frames: control.sh, starvation.sh.
import socket, struct

# The body's wire form (dpfs(5)): a tag byte, then varint lengths and counts.
def varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7f | 0x80]); n >>= 7
    return out + bytes([n])

def text(s):
    raw = s.encode()
    return varint(len(raw)) + raw

def wire(v):
    if v is None: return b"\x00"
    if v is False: return b"\x01"
    if v is True: return b"\x02"
    if isinstance(v, int): return b"\x03" + varint((v << 1) ^ (v >> 63))
    if isinstance(v, str): return b"\x06" + text(v)
    if isinstance(v, bytes): return b"\x07" + varint(len(v)) + v
    if isinstance(v, list): return b"\x08" + varint(len(v)) + b"".join(wire(x) for x in v)
    return b"\x09" + varint(len(v)) + b"".join(text(k) + wire(x) for k, x in v.items())

def unwire(data, i=0):
    tag = data[i]; i += 1
    def number(i):
        n = shift = 0
        while True:
            b = data[i]; i += 1
            n |= (b & 0x7f) << shift; shift += 7
            if b < 0x80: return n, i
    if tag <= 2: return [None, False, True][tag], i
    if tag == 3:
        n, i = number(i); return (n >> 1) ^ -(n & 1), i
    if tag == 4: return number(i)
    if tag == 5: return struct.unpack(">d", data[i:i + 8])[0], i + 8
    if tag in (6, 7):
        n, i = number(i); raw = data[i:i + n]
        return (raw.decode() if tag == 6 else raw), i + n
    n, i = number(i)
    if tag == 8:
        out = []
        for _ in range(n):
            v, i = unwire(data, i); out.append(v)
        return out, i
    out = {}
    for _ in range(n):
        k, i = number(i); key = data[i:i + k].decode(); i += k
        out[key], i = unwire(data, i)
    return out, i

def frame(body, version=2, secrets=b"", magic=b"DPFC"):
    return magic + struct.pack(">HHII", version, 0, len(body), len(secrets)) + body + secrets

def request_frame(request):
    """A request, in its wire form, framed."""
    return frame(wire(request))

def keychain(**fields):
    fields.setdefault("updateAttributes", {})
    return {"keychain": {"_0": fields}}

def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s

def reply(s):
    """One reply frame, whole; None if the connection ends first."""
    data = b""
    while len(data) < 16 or len(data) < 16 + struct.unpack(">I", data[8:12])[0]:
        chunk = s.recv(65536)
        if not chunk: return None
        data += chunk
    return data
