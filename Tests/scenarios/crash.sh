#!/usr/bin/env bash
# Crash safety: kill -9 the daemon at random points of a durable workload (writes,
# appends, truncates, renames, class changes, passcode changes, keychain adds),
# remount, unlock, and check that everything committed before the kill is intact.
source "$(dirname "$0")/lib.sh"
require_tools strace
LOAD="$(dirname "$0")/../tools/crashload.py"
SEEDS=${CRASH_SEEDS:-6}

printf 'alpha\n' > "$WORK/pa"; printf 'bravo\n' > "$WORK/pb"; chmod 600 "$WORK/pa" "$WORK/pb"
cp "$WORK/pa" "$PASS"
setup_device
unlock_device
JOURNAL="$WORK/journal"
: > "$JOURNAL"

unlock_any() {  # the old or the new passcode must work, never neither
    "$DPFS" unlock "$MNT" --passcode-file "$WORK/pa" 2>/dev/null || "$DPFS" unlock "$MNT" --passcode-file "$WORK/pb"
}

for seed in $(seq 1 "$SEEDS"); do
    pid=$(daemon_pid)
    python3 "$LOAD" "$MNT" "$JOURNAL" "$seed" "$DPFS" "$WORK/pa" "$WORK/pb" 2>/dev/null &
    load=$!
    sleep "$(awk -v s="$seed" 'BEGIN { srand(s); printf "%.2f", 0.5 + rand() * 2 }')"
    kill -9 "$pid"
    wait "$load" 2>/dev/null
    # The dead daemon's mount stays, failing closed, until the next mount takes it down.
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if grep -qs " $MNT fuse" /proc/mounts && ! stat "$MNT" >/dev/null 2>&1; then
        pass "seed $seed: the dead daemon's mount fails closed"
    else
        fail "seed $seed: the dead daemon's mount fails closed" "$(grep " $MNT " /proc/mounts; stat "$MNT" 2>&1)"
    fi
    mount_device
    # The killed daemon's control socket (/run/dpfs/PID.sock for root) goes at the next mount.
    check_fails "seed $seed: the killed daemon's control socket is removed at the next mount" test -e "/run/dpfs/$pid.sock"
    if unlock_any >/dev/null 2>&1; then pass "seed $seed: the old or the new passcode unlocks"
    else fail "seed $seed: the old or the new passcode unlocks"; break; fi
    report=$(python3 - "$JOURNAL" "$MNT" "$DPFS" <<'PY'
import hashlib, json, os, subprocess, sys
journal, mount, dpfs = sys.argv[1:4]
root = os.path.join(mount, "Documents", "crash")
files, classes, items = {}, {}, {}
records = [json.loads(line) for line in open(journal)]
in_flight = set(records[-1]["intent"]) if records and "intent" in records[-1] else set()
for r in records:
    if "sha" in r: files[r["file"]] = r["sha"]
    if "class" in r: classes[r["file"]] = r["class"]
    if "rename" in r:
        if r["rename"] in files: files[r["to"]] = files.pop(r["rename"])
        else: files.pop(r["to"], None)
        if r["rename"] in classes: classes[r["to"]] = classes.pop(r["rename"])
        else: classes.pop(r["to"], None)
    if "item" in r: items[r["item"]] = r["data"]
    if "gone" in r:
        files.pop(r["gone"], None); classes.pop(r["gone"], None)
bad = []
for name, sha in files.items():
    if name in in_flight: continue
    try:
        with open(os.path.join(root, name), "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        if got != sha: bad.append(f"{name}: content differs")
    except OSError as e:
        bad.append(f"{name}: {e}")
for name, cls in classes.items():
    if name in files and name not in in_flight:
        got = os.getxattr(os.path.join(root, name), "user.dpfs.protection").decode()
        if got != cls: bad.append(f"{name}: class {got}, committed {cls}")
for account, data in items.items():
    r = subprocess.run([dpfs, "keychain", "find", mount, "--service", "crash", "--account", account], capture_output=True)
    if r.returncode != 0 or r.stdout.decode().strip() != data:
        bad.append(f"item {account}: {r.stderr.decode().strip() or r.stdout.decode().strip()}")
# What the interrupted operation left becomes the baseline for the next rounds.
with open(journal, "a") as j:
    for name in in_flight:
        path = os.path.join(root, name)
        if os.path.exists(path):
            try:
                with open(path, "rb") as f:
                    j.write(json.dumps({"file": name, "sha": hashlib.sha256(f.read()).hexdigest(),
                                        "class": os.getxattr(path, "user.dpfs.protection").decode()}) + "\n")
            except OSError as e:
                # Left either way by the kill, but it must read one way or the other.
                bad.append(f"{name} (in flight at the kill): {e}")
                j.write(json.dumps({"gone": name}) + "\n")
        else:
            j.write(json.dumps({"gone": name}) + "\n")
print(f"{len(files)} files, {len(items)} items checked; " + ("; ".join(bad) if bad else "all intact"))
PY
)
    case "$report" in *"all intact"*) pass "seed $seed: committed data intact ($report)" ;;
                      *) fail "seed $seed: committed data intact" "$report"
                         grep -v '^$' "$DEV/daemon.log" | tail -8 | sed 's/^/     daemon: /' ;; esac
    # Every file must read, whole or with a clean EIO; never a hang or garbage.
    unreadable=0
    for f in "$MNT/Documents/crash"/*; do [ -f "$f" ] && { cat "$f" >/dev/null 2>&1 || unreadable=$((unreadable + 1)); }; done
    expect_eq "seed $seed: no file unreadable as a whole" "$unreadable" "0"
done

# An init killed part-way (strace delivers SIGKILL at its first rename: the secret
# store's record, written once the device's files are made, before its keybag) leaves
# no device, and a second init takes the directory, removing what the first left: its
# half-made device and that device's entries in the secret store (its secret), which
# nobody else knows the UUID of.
mkdir -m 700 "$WORK/killed-init" "$WORK/killed-init-mnt"
ls "$SECRETS" | sort > "$WORK/secrets-before"
# (In a subshell that outlives it: the shell's own line about the kill stays out of the log.)
(strace -f -o /dev/null -e trace=rename,renameat,renameat2 -e inject=rename,renameat,renameat2:signal=KILL:when=1 \
    "$DPFS" init "$WORK/killed-init" --passcode-file "$PASS" --secret-store "file:$SECRETS" || :) >/dev/null 2>&1
check_fails "an init killed part-way leaves no device there" test -e "$WORK/killed-init/keybag.json"
abandoned=$(ls "$SECRETS" | sort | comm -13 "$WORK/secrets-before" - | grep -o '^[0-9a-f-]\{36\}' | sort -u)
expect_eq "but its secret, in the secret store" "$(printf '%s\n' "$abandoned" | grep -c .)" "1"
check "and a second init takes the directory" "$DPFS" init "$WORK/killed-init" --passcode-file "$PASS" --secret-store "file:$SECRETS"
expect_eq "leaving nothing of the first" "$(ls -A "$WORK/killed-init" | grep -c '^\.init-')" "0"
expect_eq "not even its secret-store entries" "$(ls -A "$SECRETS" | grep -c "^${abandoned:-none}")" "0"
check "which mounts" "$DPFS" mount "$WORK/killed-init" "$WORK/killed-init-mnt"
check "and unlocks" "$DPFS" unlock "$WORK/killed-init-mnt" --passcode-file "$PASS"
"$DPFS" unmount "$WORK/killed-init-mnt" >/dev/null 2>&1
"$DPFS" lock "$MNT" --now >/dev/null 2>&1
check "the first device still unlocks" unlock_any
finish
