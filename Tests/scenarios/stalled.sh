#!/usr/bin/env bash
# The lock never waits (docs/security.md, "Events never hold the lock"): an event subscriber that
# stops reading (stopped with Ctrl-Z, paused in a debugger) fills its socket and its
# queue and is then dropped; the lock, its grace expiry, restarts and unlocks never wait
# for it. A subscriber that reads keeps every event meanwhile. And lock, restart,
# status, unmount and mount come back, with one line naming it, when the daemon itself
# is stopped.
source "$(dirname "$0")/lib.sh"

stalled=""
reader=""
flocker=""
stopped_daemon=""
scenario_cleanup() {
    local pid
    [ -n "$stopped_daemon" ] && kill -CONT "$stopped_daemon" 2>/dev/null
    for pid in $stalled $reader $flocker; do
        kill "$pid" 2>/dev/null; kill -CONT "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    return 0
}

# The daemon's event writer threads: one per subscriber (Control/EventSubscription).
event_writers() { grep -lx dpfs-events /proc/"$1"/task/*/comm 2>/dev/null | wc -l; }
writers_are() { [ "$(event_writers "$daemon")" -eq "$1" ]; }
lines_in() { [ "$(wc -l < "$1")" -ge "$2" ]; }
state_is() { [ "$(state_of)" = "$1" ]; }
has_line() { grep -q "$1" "$2" 2>/dev/null; }

MOUNT_ARGS="--grace-period 1" setup_device
unlock_device
D="$MNT/Documents"
printf 'complete secret\n' > "$D/c.txt"
setfattr -n user.dpfs.protection -v complete "$D/c.txt"
daemon=$(daemon_pid)

"$DPFS" events "$MNT" > "$WORK/stalled.jsonl" 2> "$WORK/stalled.err" &
stalled=$!
"$DPFS" events "$MNT" > "$WORK/reader.jsonl" &
reader=$!
check "two subscribers are connected" within 30 writers_are 2
"$DPFS" restart "$MNT" > /dev/null
check "both hear an event" within 30 lines_in "$WORK/stalled.jsonl" 1
kill -STOP "$stalled"

# Restarts need no passcode, and each emits an event: the stopped subscriber's socket
# fills (a few hundred events), then its queue, and it is dropped.
restarts=0
while [ "$(event_writers "$daemon")" -eq 2 ] && [ $restarts -lt 3000 ]; do
    timeout 60 "$DPFS" restart "$MNT" > /dev/null || break
    restarts=$((restarts + 1))
done
log "the stopped subscriber was dropped after $restarts restarts"
expect_eq "a stopped subscriber is dropped (its writer thread ends)" "$(event_writers "$daemon")" "1"
for _ in $(seq $((400 - restarts))); do "$DPFS" restart "$MNT" > /dev/null; restarts=$((restarts + 1)); done

unlock_device > /dev/null
check "lock --now returns at once (60 s deadline)" timeout 60 "$DPFS" lock "$MNT" --now
expect_eq "the state is locked" "$(state_of)" "locked"
check_error "the complete file is refused" "Operation not permitted" cat "$D/c.txt"

# With a grace period: the wipe comes when the timer fires.
unlock_device > /dev/null
check "lock (grace period 1 s) returns at once" timeout 60 "$DPFS" lock "$MNT"
check "the grace period ends in locked" within 60 state_is locked
check_error "the complete file is refused after the grace period" "Operation not permitted" cat "$D/c.txt"

# The reading subscriber kept every event: the first restart and $restarts more, and
# both locks through.
count_of() { grep -c "\"event\":\"$1\"" "$WORK/reader.jsonl"; }
count_is() { [ "$(count_of "$1")" -eq "$2" ]; }
check "a subscriber that reads kept every event" within 60 count_is restart "$((restarts + 1))"
check "and saw both locks through" within 60 count_is didBecomeUnavailable 2

kill -CONT "$stalled"
check "the dropped subscriber, resumed, ends" within 60 bash -c "! kill -0 $stalled"
wait "$stalled"
expect_eq "with an error" "$?" "1"
stalled=""
check "and says why" grep -q "dropped this event stream" "$WORK/stalled.err"
kept=$(grep -c '"event"' "$WORK/stalled.jsonl")
[ "$kept" -lt "$((restarts + 1))" ] && pass "it got fewer events than were sent ($kept)" \
    || fail "it got fewer events than were sent" "$kept of $((restarts + 1))"

# Every request is answered while a subscriber is stopped: a new one, stopped at once.
"$DPFS" events "$MNT" > /dev/null &
stalled=$!
check "a new subscriber is connected" within 30 writers_are 2
kill -STOP "$stalled"
unlock_device > /dev/null
for _ in $(seq 50); do "$DPFS" restart "$MNT" > /dev/null; "$DPFS" unlock "$MNT" --passcode-file "$PASS" > /dev/null; done
check "status, unlock and lock answer with a stopped subscriber" timeout 60 "$DPFS" lock "$MNT" --now
expect_eq "locked" "$(state_of)" "locked"

# The daemon stopped (Ctrl-Z in its terminal, a debugger): every touch of the mount
# blocks until it resumes; every command gives up after its 15 s deadline.
unlock_device > /dev/null
stopped_daemon=$daemon
kill -STOP "$daemon"
# Each command waits out its own deadline, so they run side by side: a stopped_run each,
# its status and its error output in files of its own.
stopped_pids=()
stopped_run() {  # NAME dpfs-arguments...
    local name=$1; shift
    ( status=0; timeout -s KILL 120 "$DPFS" "$@" > /dev/null 2> "$WORK/stopped-$name.err" || status=$?
      echo "$status" > "$WORK/stopped-$name.status" ) &
    stopped_pids+=("$!")
}
stopped_status() { cat "$WORK/stopped-$1.status" 2>/dev/null; }
# /proc/locks lists newer locks first, and with many on the machine the daemon's
# runs past the first read of it: the pid is named all the same.
python3 -c 'import fcntl, sys, time
held = [open("%s/flock-%d" % (sys.argv[1], i), "w") for i in range(300)]
for f in held: fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[1] + "/flocks-held", "w").close()
time.sleep(600)' "$WORK" &
flocker=$!
within 60 test -e "$WORK/flocks-held" || fail "300 flocks held"
commands=("lock --now" restart status "unlock --passcode-file $PASS" "biometry status" "keychain find")
for index in "${!commands[@]}"; do
    # shellcheck disable=SC2086 # the command's words
    stopped_run "$index" ${commands[$index]} "$MNT"
done
# unmount and a mount onto the same mount point ask the mount itself whether its daemon
# died (statfs): they too give up, leaving the mount as it is.
stopped_run unmount unmount "$MNT"
stopped_run mount mount "$DEV" "$MNT"
wait "${stopped_pids[@]}"
kill "$flocker"; wait "$flocker" 2>/dev/null; flocker=""
for index in "${!commands[@]}"; do
    command=${commands[$index]}
    expect_eq "${command/$PASS/PASSFILE} gives up on a stopped daemon with status 1" "$(stopped_status "$index")" "1"
    check "and says the daemon is stopped" has_line "its process (pid $daemon) is stopped" "$WORK/stopped-$index.err"
    case $command in
        lock*) check "and that the device was not locked: run it again" \
                   has_line "the device was not locked: run the command again" "$WORK/stopped-$index.err" ;;
        restart) check "and that the device was not restarted: run it again" \
                     has_line "the device was not restarted: run the command again" "$WORK/stopped-$index.err" ;;
        status) check "with 300 newer flocks, status still names the stopped daemon" \
                    has_line "its process (pid $daemon) is stopped" "$WORK/stopped-$index.err" ;;
    esac
done
expect_eq "unmount gives up on a stopped daemon with status 1" "$(stopped_status unmount)" "1"
check "and says the daemon is stopped, and how to resume it" \
    has_line "its process (pid $daemon) is stopped.*kill -CONT $daemon" "$WORK/stopped-unmount.err"
check "and how to detach the mount without it" has_line "not unmounted.*fusermount3 -u -z $MNT" "$WORK/stopped-unmount.err"
expect_eq "in one line" "$(wc -l < "$WORK/stopped-unmount.err")" "1"
check "the mount is still in place" grep -q " $MNT fuse.dpfs " /proc/mounts
expect_eq "mount onto its mount point gives up with status 1" "$(stopped_status mount)" "1"
check "and says it has a mount whose daemon is stopped" \
    has_line "$MNT already has a dpfs mount; .*its process (pid $daemon) is stopped.*kill -CONT $daemon" "$WORK/stopped-mount.err"
kill -CONT "$daemon"; stopped_daemon=""
# The commands given up on had sent nothing (they waited for the mount to name its
# socket): nothing happens at the resume.
sleep 1
expect_eq "resumed, the device is as it was: neither locked nor restarted" "$(state_of)" "unlocked"
check "resumed, it locks" timeout 60 "$DPFS" lock "$MNT" --now
expect_eq "locked after the resume" "$(state_of)" "locked"
finish
