#!/usr/bin/env bash
# Issue 7, secret hygiene: after lock and the grace period the daemon's memory holds
# neither the complete class key, nor the completeUnlessOpen private key, nor a
# complete file's key, nor plaintext of a complete file read before the lock; after
# restart no class key but none's. The search is checked against the unlocked state
# first, where the keys must be found.
source "$(dirname "$0")/lib.sh"
SCAN="$(dirname "$0")/../tools/memscan.py"

# A descriptor the caller of dpfs mount holds open does not live on in the daemon.
mkdir "$WORK/caller-marker"
exec 7< "$WORK/caller-marker"
setup_device
exec 7<&-
if find /proc/"$(daemon_pid)"/fd -type l -printf '%l\n' 2>/dev/null | grep -q caller-marker; then
    fail "the daemon holds none of its caller's descriptors"
else pass "the daemon holds none of its caller's descriptors"; fi
unlock_device
D="$MNT/Documents"
MARK="HYGIENE-$$-$RANDOM-PLAINTEXT"
{ for i in $(seq 1 2000); do echo "$MARK $i"; done; } > "$D/c.txt"
setfattr -n user.dpfs.protection -v complete "$D/c.txt"
echo "ufa" > "$D/u.txt"
# A fresh daemon, so what it holds of the plaintext comes from reading it.
"$DPFS" unmount "$MNT" && mount_device && unlock_device
PID=$(daemon_pid)
WMARK="WRITTEN-$$-$RANDOM-PLAINTEXT"
exec 4<"$D/c.txt"
# Plaintext written through this daemon to a complete file, in one request.
python3 -c "import sys; sys.stdout.write(('$WMARK ' * 2000)[:65536])" > "$D/w.txt" && setfattr -n user.dpfs.protection -v complete "$D/w.txt"
python3 -c "import sys; sys.stdout.write(('$WMARK ' * 2000)[:65536])" > "$D/w.txt"
cat "$D/c.txt" > /dev/null
echo 3 > /proc/sys/vm/drop_caches   # the next read must go through the daemon
cat "$D/c.txt" > /dev/null
# A keychain item's data, added and then changed (WhenUnlocked, never read back): it
# arrives in the frame's secret section and is sealed from that locked memory.
IMARK="ITEM-$$-$RANDOM-ADDED-DATA-$(head -c 60 /dev/zero | tr "\\0" a)"; UMARK="ITEM-$$-$RANDOM-UPDATED-DATA-$(head -c 60 /dev/zero | tr "\\0" u)"
printf '%s' "$IMARK" | "$DPFS" keychain add "$MNT" --service hygiene --account a --data-file - >/dev/null \
    || fail "keychain add"
printf '%s' "$UMARK" | "$DPFS" keychain update "$MNT" --service hygiene --account a --new-data-file - >/dev/null \
    || fail "keychain update"

# memscan names a file key by the path's last component: links named as in the mount.
ln -s "$(backing "$D/c.txt")" "$WORK/c.txt"; ln -s "$(backing "$D/u.txt")" "$WORK/u.txt"
CB="$WORK/c.txt"; UB="$WORK/u.txt"
scan() { python3 "$SCAN" "$PID" "$DEV" "$PASS" --file "$CB" --file "$UB" --text "$MARK" --text "$WMARK" --text "$IMARK" --text "$UMARK"; }
scan > "$WORK/unlocked"
for secret in "class key complete" "class key untilFirstAuth" "class key completeUnlessOpenPrivate" "file key c.txt"; do
    grep -q "^$secret present" "$WORK/unlocked" && pass "unlocked: the scan finds $secret (the search works)" \
        || fail "unlocked: the scan finds $secret" "$(cat "$WORK/unlocked")"
done

"$DPFS" lock "$MNT" --now
scan > "$WORK/locked"
for secret in "class key complete" "class key completeUnlessOpenPrivate" "file key c.txt" "text $MARK" "text $WMARK" \
              "text $IMARK" "text $UMARK"; do
    grep -q "^$secret absent" "$WORK/locked" && pass "locked: $secret is gone from daemon memory" \
        || fail "locked: $secret is gone from daemon memory" "$(grep "^$secret" "$WORK/locked")"
done
grep -q "^class key untilFirstAuth present" "$WORK/locked" && pass "locked: untilFirstAuth stays" || fail "locked: untilFirstAuth stays"
exec 4<&-

check "unlock" unlock_device
cat "$D/u.txt" >/dev/null
"$DPFS" restart "$MNT"
scan > "$WORK/restarted"
for secret in "class key complete" "class key completeUnlessOpenPrivate" "class key untilFirstAuth" "file key u.txt"; do
    grep -q "^$secret absent" "$WORK/restarted" && pass "restarted: $secret is gone" \
        || fail "restarted: $secret is gone" "$(grep "^$secret" "$WORK/restarted")"
done
grep -q "^class key none present" "$WORK/restarted" && pass "restarted: only none's key remains" || fail "restarted: none's key remains"
if tr '\0' '\n' < /proc/$PID/cmdline | grep -q 1234 || tr '\0' '\n' < /proc/$PID/environ | grep -q 1234 || grep -q 1234 "$DEV/daemon.log"; then
    fail "the passcode is not in the daemon's argv, environment or log"
else
    pass "the passcode is not in the daemon's argv, environment or log"
fi

# Idle, the daemon gives back the code pages starting it touched (session_loop.h); the
# code a request needs comes back, the keychain's and the file system's alike.
code_kib() { awk '/^[0-9a-f]+-[0-9a-f]+ r-xp .* \//{code=1; next} /^[0-9a-f]+-[0-9a-f]+ /{code=0} code && /^Rss:/{sum+=$2} END{print sum+0}' /proc/$PID/smaps; }
check "unlock" unlock_device
head -c 300000 /dev/urandom > "$WORK/idle.bin"
cp "$WORK/idle.bin" "$D/idle.bin"
sleep 1
idle=$(code_kib)
if [ "$idle" -lt 12288 ]; then pass "idle: under 12 MiB of code resident ($idle KiB)"; else fail "idle: under 12 MiB of code resident" "$idle KiB"; fi
check "the file system serves after the trim" cmp "$WORK/idle.bin" "$D/idle.bin"
printf 's3cret' | check "the keychain serves after the trim" "$DPFS" keychain add "$MNT" --service idle --account a --data-file -
expect_eq "and finds what it added" "$("$DPFS" keychain find "$MNT" --service idle --account a 2>&1)" "s3cret"
# In no sync account nothing wakes the idle daemon on a timer (each wake would touch
# code that then stays resident): the sync thread waits in poll(2) (x86-64's call 7)
# on its one wake-up pipe with no timeout (-1), not 5 s (0x1388) as before.
sync_waits_forever() { [ "$(uname -m)" != x86_64 ] || grep -qE '^7 0x[0-9a-f]+ 0x1 0xf{8}(f{8})? ' /proc/$PID/task/*/syscall; }
if within 10 sync_waits_forever; then pass "idle in no sync account: the sync thread waits without a timer"
else fail "idle in no sync account: the sync thread waits without a timer" "$(cat /proc/$PID/task/*/syscall)"; fi
finish
