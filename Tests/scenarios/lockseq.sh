#!/usr/bin/env bash
# The lock sequence: a real grace timer, unlock during the grace period
# cancels the wipe, page cache and mmap hold no plaintext after it, dirty mmap pages
# of complete files are flushed before the key goes, events in order.
source "$(dirname "$0")/lib.sh"

require_tools strace
MOUNT_ARGS="--grace-period 2" setup_device
unlock_device
D="$MNT/Documents"
"$DPFS" events "$MNT" > "$WORK/events.jsonl" 2> "$WORK/events.err" &
EVENTS_PID=$!
trap 'kill $EVENTS_PID 2>/dev/null; cleanup' EXIT
check "dpfs events has subscribed" within 60 subscribed "$WORK/events.err"

head -c 100000 /dev/urandom > "$WORK/secret.bin"
cp "$WORK/secret.bin" "$D/secret.bin"
setfattr -n user.dpfs.protection -v complete "$D/secret.bin"
printf 'AAAAAAAAAA' > "$D/mapped.bin"
setfattr -n user.dpfs.protection -v complete "$D/mapped.bin"
cmp -s "$WORK/secret.bin" "$D/secret.bin" && pass "complete file readable (pages now cached)" || fail "complete file readable"
exec 4<"$D/secret.bin"
# Handles that stay open through the lock and are used again only after the unlock.
exec 5<"$D/secret.bin"
printf 'second file' > "$D/second.bin"
setfattr -n user.dpfs.protection -v complete "$D/second.bin"
exec 6<>"$D/second.bin"

# A process that maps the file, reads it, and reads again once told to.
cat > "$WORK/mapper.py" <<'PY'
import mmap, os, sys, time
path, go, mode = sys.argv[1], sys.argv[2], sys.argv[3]
fd = os.open(path, os.O_RDWR)
m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
os.close(fd)
print("before", bytes(m[:4]).hex(), flush=True)
if mode == "write":
    m[:5] = b"dirty"          # dirty page, never msync'ed
while not os.path.exists(go):
    time.sleep(0.05)
print("after", bytes(m[:4]).hex(), flush=True)
PY
python3 "$WORK/mapper.py" "$D/secret.bin" "$WORK/go" read > "$WORK/mapper.out" 2>&1 &
MAPPER=$!
python3 "$WORK/mapper.py" "$D/mapped.bin" "$WORK/go-never" write > "$WORK/writer.out" 2>&1 &
WRITER=$!
sleep 0.5

start=$(date +%s.%N)
check "lock (with grace period)" "$DPFS" lock "$MNT"
expect_eq "state locking during the grace period" "$(state_of)" "locking"
check "complete still readable during the grace period" cmp "$WORK/secret.bin" "$D/secret.bin"

# Poll until the complete key is gone.
wiped=""
for _ in $(seq 1 60); do
    if "$DPFS" status "$MNT" --json | grep -q '"complete":false'; then wiped=$(date +%s.%N); break; fi
    sleep 0.1
done
elapsed=$(awk -v a="${wiped:-0}" -v b="$start" 'BEGIN { printf "%.2f", a - b }')
if [ -n "$wiped" ] && awk -v e="$elapsed" 'BEGIN { exit !(e >= 2.0 && e <= 3.2) }'; then
    pass "keys wiped after the grace period (${elapsed}s for 2s)"
else
    fail "keys wiped after the grace period" "took ${elapsed}s"
fi
expect_eq "state locked after the grace period" "$(state_of)" "locked"
check_error "read on a handle opened before the lock → EPERM (no cached plaintext)" "Operation not permitted" cat <&4
check_error "open after the grace period → EPERM" "Operation not permitted" cat "$D/secret.bin"
touch "$WORK/go"
wait $MAPPER 2>/dev/null
mapper_status=$?
if grep -q "^after" "$WORK/mapper.out"; then
    fail "mmap gives no plaintext after the grace period" "$(cat "$WORK/mapper.out")"
else
    [ $mapper_status -ne 0 ] && pass "mmap access after the grace period faults (exit $mapper_status)" \
        || fail "mmap access after the grace period faults"
fi
kill $WRITER 2>/dev/null; wait $WRITER 2>/dev/null
exec 4<&-

check "unlock" unlock_device
check "an unlock of the unlocked device (no event: nothing changed)" unlock_device
# The first use of each file since the unlock is through a handle opened before the
# lock: it works again, as on iOS, with no other open to unwrap the key first.
check "a handle opened before the lock reads again after unlock" cmp "$WORK/secret.bin" - <&5
check "and one writes again" python3 -c 'import os; assert os.pwrite(6, b"SECOND", 0) == 6'
exec 5<&- 6<&-
expect_eq "what it wrote is there" "$(cat "$D/second.bin")" "SECOND file"
# The pages such a read leaves in the kernel's cache go at the next lock, as every
# complete file's do, also once the handle is closed: read again after that lock, the
# file's blocks come from the daemon (preads past the header), not from the cache.
cp "$WORK/secret.bin" "$D/third.bin"
setfattr -n user.dpfs.protection -v complete "$D/third.bin"
python3 - "$DPFS" "$MNT" "$PASS" "$D/third.bin" <<'PY' || fail "an old handle's read after unlock, then a lock"
import os, subprocess, sys
dpfs, mnt, passcode, path = sys.argv[1:]
run = lambda *a: subprocess.run([dpfs, *a], check=True, stdout=subprocess.DEVNULL)
fd = os.open(path, os.O_RDONLY)
run("lock", mnt, "--now"); run("unlock", mnt, "--passcode-file", passcode)
assert len(os.pread(fd, 200000, 0)) == 100000
os.close(fd)
run("lock", mnt, "--now"); run("unlock", mnt, "--passcode-file", passcode)
PY
daemon=$(daemon_pid)
strace -f -qq -p "$daemon" -e trace=pread64 -o "$WORK/reread.strace" 2>/dev/null &
tracer=$!
for _ in $(seq 300); do grep -qs 'TracerPid:.*[1-9]' "/proc/$daemon/status" && break; sleep 0.1; done
check "read again after the lock" cmp "$WORK/secret.bin" "$D/third.bin"
kill -INT "$tracer"; wait "$tracer" 2>/dev/null
reads=$(grep 'pread64(' "$WORK/reread.strace" | grep -cv ', 0) = ')
if [ "$reads" -gt 0 ]; then pass "whose pages the lock had dropped ($reads block reads)"
else fail "the lock drops the pages an old handle's read cached" "no block read: served from the page cache"; fi
expect_eq "dirty mmap pages were flushed before the wipe" "$(head -c 5 "$D/mapped.bin")" "dirty"
check "complete content intact after unlock" cmp "$WORK/secret.bin" "$D/secret.bin"

# Unlock during the grace period cancels the wipe.
check "lock again" "$DPFS" lock "$MNT"
sleep 0.5
check "unlock during the grace period" unlock_device
sleep 2.5
expect_eq "still unlocked: the wipe was cancelled" "$(state_of)" "unlocked"
check "complete readable: the wipe was cancelled" cmp "$WORK/secret.bin" "$D/secret.bin"

check "restart" "$DPFS" restart "$MNT"
sleep 0.3
kill $EVENTS_PID 2>/dev/null
wait $EVENTS_PID 2>/dev/null
events=$(sed -n 's/.*"event":"\([a-zA-Z]*\)".*/\1/p' "$WORK/events.jsonl" | tr '\n' ' ')
expect_eq "events in order" "$events" "willBecomeUnavailable didBecomeUnavailable didBecomeAvailable willBecomeUnavailable didBecomeUnavailable didBecomeAvailable willBecomeUnavailable didBecomeUnavailable didBecomeAvailable willBecomeUnavailable didBecomeAvailable restart "
grep -q '"timestamp":"20' "$WORK/events.jsonl" && pass "events carry a timestamp" || fail "events carry a timestamp"
grep -q '"state":"locked"' "$WORK/events.jsonl" && pass "events carry the state" || fail "events carry the state"
finish
