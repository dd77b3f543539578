#!/usr/bin/env python3
"""Out-of-band secret hygiene check for dpfs tests.

Recomputes, with libsodium through ctypes and the same published format (dpfs(5)),
the secrets a dpfs daemon may hold: the class keys (from the passcode, the device
secret and keybag.json) and a file's key (from its backing header), then searches
the daemon's memory (/proc/PID/mem) for them and for given plaintext markers.

usage: memscan.py PID DEVICE_DIR PASSCODE_FILE [--file BACKING_FILE]... [--text MARKER]...
prints one line per secret: "<name> present|absent"
"""
import base64, ctypes, ctypes.util, json, re, sys

sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
assert sodium.sodium_init() >= 0

def blake2b(message, key, size=32):
    out = ctypes.create_string_buffer(size)
    sodium.crypto_generichash(out, ctypes.c_size_t(size), message, ctypes.c_ulonglong(len(message)), key, ctypes.c_size_t(len(key)))
    return out.raw

def aead_open(sealed, ad, key):
    nonce, body = sealed[:24], sealed[24:]
    out = ctypes.create_string_buffer(len(body) - 16)
    n = ctypes.c_ulonglong(0)
    rc = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(out, ctypes.byref(n), None, body, ctypes.c_ulonglong(len(body)),
                                                          ad, ctypes.c_ulonglong(len(ad)), nonce, key)
    return out.raw if rc == 0 else None

def seal_open(sealed, public, private):
    out = ctypes.create_string_buffer(len(sealed) - 48)
    rc = sodium.crypto_box_seal_open(out, sealed, ctypes.c_ulonglong(len(sealed)), public, private)
    return out.raw if rc == 0 else None

def class_keys(device, passcode):
    bag = json.load(open(device + "/keybag.json"))
    # The device secret lives in the secret store the keybag names (dpfs(5), "Secret store").
    store = bag["secretStore"]
    assert store.startswith("file:"), "memscan reads file secret stores only"
    secret = open(store[len("file:"):] + "/" + bag["deviceUUID"] + ".secret", "rb").read()
    kdf = bag["kdf"]
    stretched = ctypes.create_string_buffer(32)
    salt = base64.b64decode(kdf["salt"])
    assert sodium.crypto_pwhash(stretched, ctypes.c_ulonglong(32), passcode, ctypes.c_ulonglong(len(passcode)), salt,
                                ctypes.c_ulonglong(kdf["opsLimit"]), ctypes.c_size_t(kdf["memLimit"]), 2) == 0
    passcode_key = blake2b(stretched.raw, secret)
    wrapped = {k: base64.b64decode(v) for k, v in bag["wrappedKeys"].items()}
    keys = {}
    for name in ("complete", "untilFirstAuth", "completeUnlessOpenPrivate"):
        keys[name] = aead_open(wrapped[name], b"dpfs.classkey.v1." + name.encode(), passcode_key)
    none_key = blake2b(b"dpfs.class-none.v1", secret)
    keys["none"] = aead_open(wrapped["none"], b"dpfs.classkey.v1.none", none_key)
    keys["completeUnlessOpenPublic"] = base64.b64decode(bag["completeUnlessOpenPublicKey"])
    keys["metadata"] = blake2b(b"dpfs.metadata.v2", secret)
    return keys

def file_key(path, keys):
    header = open(path, "rb").read(512)
    file_id = header[8:24]
    slots = []
    for i in range(2):
        raw = header[24 + 128 * i: 24 + 128 * (i + 1)]
        # Format 2: each slot is MACed under the metadata key (dpfs(5), "Backing file format").
        mac = blake2b(b"dpfs.header-slot.v2" + header[:24] + bytes([i]) + raw[:112], keys["metadata"], 16)
        if mac != raw[112:]:
            continue
        generation = int.from_bytes(raw[:8], "little")
        # The class byte's top bit marks a raise's slot (its key replaces the other's).
        slots.append((generation, raw[8] & 0x7f, raw[10:10 + raw[9]]))
    generation, cls, wrapped = max(slots)
    names = {0: "none", 1: "complete", 3: "untilFirstAuth"}
    if cls == 2:
        payload = seal_open(wrapped, keys["completeUnlessOpenPublic"], keys["completeUnlessOpenPrivate"])
        return payload[:32] if payload else None
    return aead_open(wrapped, b"dpfs.filekey.v1" + file_id + bytes([cls]), keys[names[cls]])

def memory(pid):
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
            start, end, perms = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
            if "r" not in perms or "[vvar]" in line or "[vsyscall]" in line:
                continue
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except (OSError, ValueError, OverflowError):
                pass
    return b"".join(chunks)

def main():
    args = sys.argv[1:]
    pid, device, passfile = args[0], args[1], args[2]
    files, texts = [], []
    rest = args[3:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        (files if flag == "--file" else texts).append(value)
    passcode = open(passfile, "rb").read().split(b"\n")[0]
    keys = class_keys(device, passcode)
    secrets = {f"class key {k}": v for k, v in keys.items() if k not in ("completeUnlessOpenPublic", "metadata")}
    for f in files:
        secrets[f"file key {f.rsplit('/', 1)[-1]}"] = file_key(f, keys)
    for t in texts:
        secrets[f"text {t}"] = t.encode()
    image = memory(pid)
    for name, value in secrets.items():
        if value is None:
            print(f"{name} unrecoverable")
        else:
            print(f"{name} {'present' if value in image else 'absent'}")

main()
