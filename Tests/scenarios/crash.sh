#!/usr/bin/env bash
# Crash safety: kill -9 the daemon at random points of a durable workload (writes,
# appends, truncates, renames, class changes, passcode changes, keychain adds),
# remount, unlock, and check that everything committed before the kill is intact.
source "$(dirname "$0")/lib.sh"
require_tools strace
LOAD="$(dirname "$0")/../tools/crashload.py"
SEEDS=${CRASH_SEEDS:-6}
KILLED_MOUNT="$WORK/killed-mount"

scenario_cleanup() {
    local mnt
    for mnt in "$WORK/killed-init-mnt" "$WORK/killed-moved-mnt" "$WORK/killed-mount-mnt"; do
        if grep -qs " $mnt fuse" /proc/mounts; then
            "$DPFS" unmount "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null
        fi
    done
    # After the device on it is unmounted: the tmpfs the mount-point init is killed in.
    if grep -qs " $KILLED_MOUNT tmpfs" /proc/mounts; then umount "$KILLED_MOUNT" 2>/dev/null || umount -l "$KILLED_MOUNT"; fi
}

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
device_entries=$(ls -A "$WORK/killed-init")
expect_eq "leaving nothing of the first" "$(ls -A "$WORK/killed-init" | grep -c '^\.init-')" "0"
expect_eq "not even its secret-store entries" "$(ls -A "$SECRETS" | grep -c "^${abandoned:-none}")" "0"
check "which mounts" "$DPFS" mount "$WORK/killed-init" "$WORK/killed-init-mnt"
check "and unlocks" "$DPFS" unlock "$WORK/killed-init-mnt" --passcode-file "$PASS"
"$DPFS" unmount "$WORK/killed-init-mnt" >/dev/null 2>&1

# Into a directory it makes, init makes none until the device is whole: killed at the
# same rename, it leaves nothing where the directory would be.
ls "$SECRETS" | sort > "$WORK/secrets-before"
(strace -f -o /dev/null -e trace=rename,renameat,renameat2 -e inject=rename,renameat,renameat2:signal=KILL:when=1 \
    "$DPFS" init "$WORK/killed-absent" --passcode-file "$PASS" --secret-store "file:$SECRETS" || :) >/dev/null 2>&1
check_fails "an init killed part-way leaves no directory it was to make" test -e "$WORK/killed-absent"
abandoned=$(ls "$SECRETS" | sort | comm -13 "$WORK/secrets-before" - | grep -o '^[0-9a-f-]\{36\}' | sort -u)
check "and a second init makes it" "$DPFS" init "$WORK/killed-absent" --passcode-file "$PASS" --secret-store "file:$SECRETS"
expect_eq "forgetting the first one's secret-store entries" \
    "$(printf '%s\n' "$abandoned" | grep -c .) $(ls -A "$SECRETS" | grep -c "^${abandoned:-none}")" "1 0"
expect_eq "a device directory, mode 700, with nothing of the first beside it" \
    "$(stat -c %a "$WORK/killed-absent") $(ls -A "$WORK" | grep -c '^\.killed-absent\.init-')" "700 0"

# Into a directory it is given, init builds inside it, moves the entries up and keeps
# the directory's mode. Killed once the keybag has moved (strace delivers SIGKILL at
# the build's rmdir, after the last move), it has made a whole device there, and that
# device has the mode the directory had. The build it leaves inside the device goes
# at the next mount; a directory of that name holding anything else stays.
mkdir -m 755 "$WORK/killed-moved" "$WORK/killed-moved-mnt"
(strace -f -o /dev/null -e trace=rmdir -e inject=rmdir:signal=KILL:when=1 \
    "$DPFS" init "$WORK/killed-moved" --passcode-file "$PASS" --secret-store "file:$SECRETS" || :) >/dev/null 2>&1
expect_eq "an init killed after its keybag moved leaves a device, and its build" \
    "$(ls -A "$WORK/killed-moved" | grep -c '^keybag\.json$\|^\.init-')" "2"
expect_eq "with the mode the directory had" "$(stat -c %a "$WORK/killed-moved")" "755"
mkdir -m 700 "$WORK/killed-moved/.init-a1B2c3"
printf 'a note of the user\n' > "$WORK/killed-moved/.init-a1B2c3/notes.txt"
check "which mounts" "$DPFS" mount "$WORK/killed-moved" "$WORK/killed-moved-mnt"
expect_eq "the mount removes the build the killed init left, and keeps the directory the user made" \
    "$(ls -A "$WORK/killed-moved" | grep '^\.init-' | tr '\n' ' ')$(cat "$WORK/killed-moved/.init-a1B2c3/notes.txt")" \
    ".init-a1B2c3 a note of the user"
check "saying so in daemon.log" grep -q "removed $WORK/killed-moved/\.init-.*killed init" "$WORK/killed-moved/daemon.log"
check "and unlocks" "$DPFS" unlock "$WORK/killed-moved-mnt" --passcode-file "$PASS"
"$DPFS" unmount "$WORK/killed-moved-mnt" >/dev/null 2>&1
# An init on a directory that is not empty is refused; what it clears first of killed
# builds is only what a build holds, never a directory of the user's that is named so.
check_fails "an init on the device is refused" "$DPFS" init "$WORK/killed-moved" --passcode-file "$PASS" --secret-store "file:$SECRETS"
expect_eq "and keeps the user's directory named as a build, with what it holds" \
    "$(cat "$WORK/killed-moved/.init-a1B2c3/notes.txt" 2>&1)" "a note of the user"

# Into a mount point (a filesystem mounted for the device), init builds inside it and
# moves the entries up one by one, the keybag last. Killed between two of those moves
# (renameat2, the only one; the record's rename is rename), it leaves some of the
# device's entries in the mount point and the rest, with the keybag, in the build: the
# next init removes those entries too, and never a file that is not the build's.
if mkdir -p "$KILLED_MOUNT" "$WORK/killed-mount-mnt" \
    && mount -t tmpfs -o size=64m,mode=1777 dpfs-crash-test "$KILLED_MOUNT" 2>/dev/null; then
    ls "$SECRETS" | sort > "$WORK/secrets-before"
    (strace -f -o /dev/null -e trace=renameat2 -e inject=renameat2:signal=KILL:when=3 \
        "$DPFS" init "$KILLED_MOUNT" --passcode-file "$PASS" --secret-store "file:$SECRETS" || :) >/dev/null 2>&1
    left=$(ls -A "$KILLED_MOUNT")
    if [ "$(printf '%s\n' "$left" | grep -c '^\.init-')" = 1 ] && ! printf '%s\n' "$left" | grep -qx keybag.json \
        && [ "$(printf '%s\n' "$left" | grep -vc '^\.init-')" -ge 1 ]; then
        pass "an init into a mount point killed while moving up leaves entries there, no keybag"
    else
        fail "an init into a mount point killed while moving up leaves entries there, no keybag" "$(echo $left)"
    fi
    abandoned=$(ls "$SECRETS" | sort | comm -13 "$WORK/secrets-before" - | grep -o '^[0-9a-f-]\{36\}' | sort -u)
    expect_eq "and its secret in the secret store" "$(printf '%s\n' "$abandoned" | grep -c .)" "1"
    printf 'a note of the user\n' > "$KILLED_MOUNT/notes.txt"
    check_error "an init finding a file of someone else's there refuses" "is not empty" \
        "$DPFS" init "$KILLED_MOUNT" --passcode-file "$PASS" --secret-store "file:$SECRETS"
    expect_eq "keeps that file, and removes all the killed init left" \
        "$(ls -A "$KILLED_MOUNT" | tr '\n' ' ')$(cat "$KILLED_MOUNT/notes.txt")" "notes.txt a note of the user"
    expect_eq "its secret-store entries too" "$(ls -A "$SECRETS" | grep -c "^${abandoned:-none}")" "0"
    expect_eq "and gives the mount point back its mode" "$(stat -c %a "$KILLED_MOUNT")" "1777"
    rm -f "$KILLED_MOUNT/notes.txt"
    check "with that file gone, an init takes the mount point" \
        "$DPFS" init "$KILLED_MOUNT" --passcode-file "$PASS" --secret-store "file:$SECRETS"
    expect_eq "which holds a device's entries and nothing else" "$(ls -A "$KILLED_MOUNT")" "$device_entries"
    expect_eq "keeping its mode" "$(stat -c %a "$KILLED_MOUNT")" "1777"
    check "the device there mounts" "$DPFS" mount "$KILLED_MOUNT" "$WORK/killed-mount-mnt"
    check "and unlocks" "$DPFS" unlock "$WORK/killed-mount-mnt" --passcode-file "$PASS"
    "$DPFS" unmount "$WORK/killed-mount-mnt" >/dev/null 2>&1
    umount "$KILLED_MOUNT"
else
    log "mounting a tmpfs needs root: an init killed while moving up into a mount point is not checked"
fi
"$DPFS" lock "$MNT" --now >/dev/null 2>&1
check "the first device still unlocks" unlock_any
finish
