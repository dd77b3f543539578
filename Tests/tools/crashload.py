#!/usr/bin/env python3
"""Crash-test workload for dpfs: does durable work on a mount and records, after
each operation is committed (fsync returned, or the command exited 0), what must
survive in a journal on the plain disk. Runs until killed or until its mount dies.

usage: crashload.py MOUNT JOURNAL SEED DPFS PASSCODE_A PASSCODE_B
"""
import hashlib, json, os, random, subprocess, sys

mount, journal_path, seed, dpfs, pass_a, pass_b = sys.argv[1:7]
rng = random.Random(int(seed))
root = os.path.join(mount, "Documents", "crash")
os.makedirs(root, exist_ok=True)
journal = open(journal_path, "a", buffering=1)
classes = ["none", "untilFirstAuth", "complete", "completeUnlessOpen"]
current_pass, other_pass = pass_a, pass_b

def commit(record):
    journal.write(json.dumps(record) + "\n")
    journal.flush()
    os.fsync(journal.fileno())

def write_file(name, data, append=False):
    path = os.path.join(root, name)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()

step = 0
try:
    while True:
        step += 1
        name = f"f{rng.randrange(20)}"
        target = f"f{rng.randrange(20)}"
        op = rng.choice(["write", "write", "append", "truncate", "rename", "class", "passcode", "keychain"])
        # The operation in flight at the kill may leave its files either way.
        commit({"intent": [name, target] if op == "rename" else [name]})
        if op == "write":
            data = rng.randbytes(rng.choice([1, 100, 4095, 4096, 4097, 70000, 300000]))
            commit({"file": name, "sha": write_file(name, data)})
        elif op == "append" and os.path.exists(os.path.join(root, name)):
            commit({"file": name, "sha": write_file(name, rng.randbytes(rng.randrange(1, 9000)), append=True)})
        elif op == "truncate" and os.path.exists(os.path.join(root, name)):
            path = os.path.join(root, name)
            fd = os.open(path, os.O_WRONLY)
            os.ftruncate(fd, rng.randrange(0, 20000)); os.fsync(fd); os.close(fd)
            with open(path, "rb") as f:
                commit({"file": name, "sha": hashlib.sha256(f.read()).hexdigest()})
        elif op == "rename" and os.path.exists(os.path.join(root, name)):
            if target != name:
                os.rename(os.path.join(root, name), os.path.join(root, target))
                dfd = os.open(root, os.O_RDONLY); os.fsync(dfd); os.close(dfd)
                commit({"rename": name, "to": target})
        elif op == "class" and os.path.exists(os.path.join(root, name)):
            cls = rng.choice(classes)
            os.setxattr(os.path.join(root, name), "user.dpfs.protection", cls.encode())
            commit({"file": name, "class": cls})
        elif op == "passcode":
            r = subprocess.run([dpfs, "passcode", "change", mount, "--passcode-file", current_pass,
                                "--new-passcode-file", other_pass], capture_output=True)
            if r.returncode == 0:
                current_pass, other_pass = other_pass, current_pass
                commit({"passcode": current_pass})
            else:
                commit({"passcode-maybe": other_pass})
        elif op == "keychain":
            account = f"acct{step}"
            r = subprocess.run([dpfs, "keychain", "add", mount, "--service", "crash", "--account", account,
                                "--accessible", "AfterFirstUnlock", "--data-file", "-"],
                               input=f"secret-{step}".encode(), capture_output=True)
            if r.returncode == 0:
                commit({"item": account, "data": f"secret-{step}"})
except OSError as error:
    print(f"workload stopped at step {step}: {error}", file=sys.stderr)
