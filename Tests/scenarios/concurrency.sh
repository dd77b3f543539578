#!/usr/bin/env bash
# Concurrency through the mount (Tests/tools/concurrent.py): several processes writing
# their own regions of one file (one of them through mmap) while others read it;
# O_APPEND writers on one file; processes creating, renaming (also over one shared
# name), linking, unlinking, mkdir-ing and rmdir-ing in one directory while others list
# and read it. Each result must equal the sequential expectation, and no process may
# meet EIO. Then all of it again, in a class none and a class untilFirstAuth directory
# side by side, while the device is locked and unlocked over and over (lock --now) and
# a class complete file is read throughout: the available classes are never disturbed,
# and the complete file reads exactly or is refused with EPERM, never anything else.
source "$(dirname "$0")/lib.sh"

TOOL="$(cd "$(dirname "$0")/../tools" && pwd)/concurrent.py"
setup_device
unlock_device >/dev/null || { fail "unlock"; finish; }

# run_tool "what" args...: one workload; its last line says ok or FAIL.
run_tool() {
    local what=$1 out start
    shift
    start=$EPOCHREALTIME
    if out=$(timeout 300 python3 "$TOOL" "$@" 2>&1); then
        pass "$what ($(printf '%.1f' "$(echo "$EPOCHREALTIME - $start" | bc)") s): $(printf '%s' "$out" | tail -1)"
    else
        fail "$what" "$(printf '%s' "$out" | tail -5)"
    fi
}

D="$MNT/Documents"
mkdir -p "$D/ufa" "$D/none" "$D/complete"
setfattr -n user.dpfs.protection -v untilFirstAuth "$D/ufa"
setfattr -n user.dpfs.protection -v none "$D/none"
setfattr -n user.dpfs.protection -v complete "$D/complete"

# ---------------------------------------------------------------- unlocked
run_tool "regions of one file written at once" regions "$D/ufa/regions" --writers 8 --region 100003 --passes 4 --seed 7 --readers 3
run_tool "O_APPEND writers on one file" append "$D/ufa/appended" --writers 6 --records 300 --size 700
run_tool "create/rename/link/unlink/mkdir/rmdir in one directory" churn "$D/ufa/churn" --procs 6 --iterations 60 --seed 11 --readers 2
(
    python3 "$TOOL" regions "$D/none/regions" --writers 6 --region 77777 --passes 3 --seed 3 --readers 2 > "$WORK/a.out" 2>&1 &
    python3 "$TOOL" append "$D/none/appended" --writers 4 --records 200 --size 513 > "$WORK/b.out" 2>&1 &
    python3 "$TOOL" churn "$D/none/churn" --procs 4 --iterations 40 --seed 5 --readers 2 > "$WORK/c.out" 2>&1 &
    wait
)
for f in a b c; do
    line=$(tail -1 "$WORK/$f.out")
    case $line in ok*) pass "together: $line" ;; *) fail "together ($f)" "$(tail -5 "$WORK/$f.out")" ;; esac
done
rm -rf "$D/ufa"/* "$D/none"/*

STOP="$WORK/stop"

# ---------------------------------------------------------------- one thread streaming
# One thread asking, request after request (an attribute, never cached, and reads at
# random places), while other processes come and go: they must be served, and every
# answer must stay right.
head -c 1048576 /dev/urandom > "$WORK/streamed"
cp "$WORK/streamed" "$D/ufa/streamed"
python3 - "$D/ufa/streamed" "$WORK/streamed" "$STOP.streak" > "$WORK/streak.out" 2>&1 <<'PY' &
import os, random, sys
path, reference, stop = sys.argv[1:4]
expected = open(reference, "rb").read()
fd = os.open(path, os.O_RDONLY)
calls = 0
rng = random.Random(5)
while not os.path.exists(stop):
    if os.getxattr(path, "user.dpfs.protection") != b"untilFirstAuth":
        print("FAIL: wrong class"); sys.exit(1)
    offset = rng.randrange(0, len(expected) // 4096) * 4096
    if os.pread(fd, 4096, offset) != expected[offset:offset + 4096]:
        print(f"FAIL: wrong bytes at {offset}"); sys.exit(1)
    calls += 1
    if calls % 500 == 0:
        open(stop + ".next", "w").write(str(calls))
        os.replace(stop + ".next", stop + ".progress")
print(f"ok streamer: {calls} rounds")
PY
streamer=$!
within 120 test -e "$STOP.streak.progress" || fail "the streamer got going"
others_ok=1
for i in $(seq 1 100); do
    printf 'other caller %s\n' "$i" > "$D/none/other.$i" || others_ok=0
    [ "$(cat "$D/none/other.$i")" = "other caller $i" ] || others_ok=0
    stat "$D/none/other.$i" >/dev/null || others_ok=0
done
listed=$(ls "$D/none" | grep -c '^other\.')
rm -f "$D/none"/other.*
[ "$others_ok" = 1 ] && [ "$listed" = 100 ] && pass "other callers served while one thread streams" \
    || fail "other callers while one thread streams" "listed $listed of 100"
progress_before=$(cat "$STOP.streak.progress")
within 120 sh -c "[ \$(cat '$STOP.streak.progress') -gt $progress_before ]" \
    && pass "the streamer goes on after the others left" || fail "the streamer stalled"
touch "$STOP.streak"
timeout 120 tail --pid="$streamer" -f /dev/null || kill "$streamer" 2>/dev/null
wait "$streamer"
line=$(tail -1 "$WORK/streak.out")
case $line in "ok streamer: "*) pass "streamed reads exact: $line" ;; *) fail "streamer" "$(tail -3 "$WORK/streak.out")" ;; esac
rm -f "$D/ufa/streamed"

# ---------------------------------------------------------------- while locking and unlocking
head -c 300000 /dev/urandom > "$WORK/secret"
cp "$WORK/secret" "$D/complete/secret"
expect_eq "the watched file is of class complete" "$(getfattr --absolute-names --only-values -n user.dpfs.protection "$D/complete/secret")" complete
sha=$(sha256sum < "$WORK/secret" | cut -d' ' -f1)
python3 "$TOOL" watch "$D/complete/secret" --sha256 "$sha" --stop "$STOP" > "$WORK/watch.out" 2>&1 &
watcher=$!
(
    cycles=0
    while [ ! -e "$STOP" ]; do
        "$DPFS" lock "$MNT" --now >/dev/null || { echo "lock failed"; exit 1; }
        sleep 0.3
        "$DPFS" unlock "$MNT" --passcode-file "$PASS" >/dev/null || { echo "unlock failed"; exit 1; }
        cycles=$((cycles + 1))
        sleep 0.2
    done
    echo "cycles $cycles"
) > "$WORK/cycler.out" 2>&1 &
cycler=$!

for cls in ufa none; do
    python3 "$TOOL" regions "$D/$cls/regions" --writers 6 --region 100003 --passes 16 --seed 21 --readers 2 > "$WORK/$cls-r.out" 2>&1 &
    python3 "$TOOL" append "$D/$cls/appended" --writers 4 --records 1500 --size 700 > "$WORK/$cls-a.out" 2>&1 &
    python3 "$TOOL" churn "$D/$cls/churn" --procs 4 --iterations 250 --seed 23 --readers 2 > "$WORK/$cls-c.out" 2>&1 &
done
wait $(jobs -p | grep -v -e "^$watcher\$" -e "^$cycler\$") 2>/dev/null
# Let the cycler run a few more rounds with nothing else going on, then stop it.
sleep 1
touch "$STOP"
wait "$cycler"; cycler_status=$?
wait "$watcher"
for cls in ufa none; do
    for kind in r a c; do
        line=$(tail -1 "$WORK/$cls-$kind.out")
        case $line in ok*) pass "while locking, class ${cls/ufa/untilFirstAuth}: $line" ;;
                      *) fail "while locking, class ${cls/ufa/untilFirstAuth} ($kind)" "$(tail -5 "$WORK/$cls-$kind.out")" ;; esac
    done
done
cycles=$(sed -n 's/^cycles //p' "$WORK/cycler.out")
[ "$cycler_status" = 0 ] && [ "${cycles:-0}" -ge 3 ] && pass "the device was locked and unlocked $cycles times meanwhile" \
    || fail "lock/unlock cycling" "$(cat "$WORK/cycler.out")"
line=$(tail -1 "$WORK/watch.out")
case $line in
    "ok watch: "*) refused=$(printf '%s' "$line" | sed -n 's/.*, \([0-9]*\) refused.*/\1/p')
                   [ "${refused:-0}" -gt 0 ] && pass "complete file while cycling: $line" \
                       || fail "complete file was never refused while locked" "$line" ;;
    *) fail "complete file while cycling" "$(tail -5 "$WORK/watch.out")" ;;
esac

unlock_device >/dev/null 2>&1
check "the complete file reads back exactly after the last unlock" cmp "$WORK/secret" "$D/complete/secret"
check "the daemon logged no errors" sh -c "! grep -i ' error ' '$DEV/daemon.log'"
finish
