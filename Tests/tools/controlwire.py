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
    """`secrets` is the secret section as sent, length prefixes and all (`section`)."""
    return magic + struct.pack(">HHII", version, 0, len(body), len(secrets)) + body + secrets

def section(*secrets):
    """A secret section: each secret with its u32 length."""
    return b"".join(struct.pack(">I", len(s)) + s for s in secrets)

def request_frame(request, secret=None):
    """A request, in its wire form, framed; `secret`: its one secret (an item's data)."""
    return frame(wire(request), secrets=b"" if secret is None else section(secret))

def keychain(**fields):
    """A keychain request. `attributes`, `updateAttributes`: text by name;
    `dataAttributes`, `updateDataAttributes`: bytes by name (an attribute given as
    Data: service, account, path, securityDomain, server, label, description,
    comment); `textAttributes`, `updateTextAttributes`: generic given as text (in
    `attributes` it is bytes in hex); `limit`, `returning`, `app`, `authentication`.
    An item's data and new data travel as the frame's secret (keychain_frame)."""
    fields.setdefault("attributes", {})
    fields.setdefault("updateAttributes", {})
    for name in ("dataAttributes", "updateDataAttributes"):
        if name in fields and not all(isinstance(v, bytes) for v in fields[name].values()):
            raise TypeError(name + " holds bytes")
    return {"keychain": {"_0": fields}}

def keychain_frame(data=None, **fields):
    """A keychain request framed, an add's data or an update's new data its secret."""
    return request_frame(keychain(**fields), secret=data)

# kSecValuePersistentRef: "dpfsref2", the class (four ASCII bytes), a 24-byte token.
# Requests and replies carry it in hex as the attribute "persistentRef".
REF_MAGIC = b"dpfsref2"
REF_TOKEN_SIZE = 24

def persistent_ref(hex_ref):
    """(class, token) of a reply's "persistentRef"; None for what is no such ref."""
    raw = bytes.fromhex(hex_ref)
    if len(raw) != len(REF_MAGIC) + 4 + REF_TOKEN_SIZE or not raw.startswith(REF_MAGIC): return None
    return raw[len(REF_MAGIC):len(REF_MAGIC) + 4].decode(), raw[len(REF_MAGIC) + 4:]

def items(body):
    """A keychain reply's items, each one map of attributes: text as str, those given
    as bytes (dataAttributes) as bytes, a generic given as text (textAttributes) as
    str, and the data, if any, under "data"."""
    out = []
    for item in ((body or {}).get("keychain") or {}).get("items") or []:
        merged = dict(item.get("attributes") or {})
        merged.update(item.get("dataAttributes") or {})
        merged.update(item.get("textAttributes") or {})
        if item.get("data") is not None: merged["data"] = item["data"]
        out.append(merged)
    return out

def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s

def frame_size(data):
    """A frame's whole size from its header: the body and the secret section."""
    body, secrets = struct.unpack(">II", data[8:16])
    return 16 + body + secrets

def reply(s):
    """One reply frame, whole (an export's carries a secret); None if the connection
    ends first."""
    data = b""
    while len(data) < 16 or len(data) < frame_size(data):
        chunk = s.recv(65536)
        if not chunk: return None
        data += chunk
    return data

def reply_body(data):
    """The value of a whole reply frame's body."""
    return unwire(data[16:16 + struct.unpack(">I", data[8:12])[0]])[0]
