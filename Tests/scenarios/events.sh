#!/usr/bin/env bash
# dpfs events says on standard error when it has subscribed (dpfs(1), events): a
# script that waits for that line, then locks, gets the lock's events; standard output
# stays one JSON event per line; --quiet leaves the line out.
source "$(dirname "$0")/lib.sh"

subscribers=""
scenario_cleanup() {
    # dpfs events ends at the unmount; one left by a failed check is ended by its pid.
    local pid
    for pid in $subscribers; do kill "$pid" 2>/dev/null; done
    return 0
}
gone() { ! kill -0 "$1" 2>/dev/null; }
has_line() { grep -q "$1" "$2" 2>/dev/null; }
event_writers() { grep -lx dpfs-events /proc/"$1"/task/*/comm 2>/dev/null | wc -l; }
writers_are() { [ "$(event_writers "$daemon")" -eq "$1" ]; }
# Every line of $1 is a JSON object with an "event".
json_events_only() {
    python3 -c 'import json,sys
for line in open(sys.argv[1]):
    assert "event" in json.loads(line), line' "$1"
}

setup_device
unlock_device
daemon=$(daemon_pid)

# As dpfs(1) has it: start it, wait for the line, lock. The lock follows the line at
# once, so an event missed for want of a subscription would show here.
"$DPFS" events "$MNT" > "$WORK/events.out" 2> "$WORK/events.err" &
subscriber=$!
subscribers="$subscribers $subscriber"
check "dpfs events says it subscribed" within 60 subscribed "$WORK/events.err"
expect_eq "naming the mountpoint and the state" "$(head -1 "$WORK/events.err")" \
    "dpfs events: subscribed to $MNT (state: unlocked)"
check "lock --now" "$DPFS" lock "$MNT" --now
check "the lock's event came" within 60 has_line '"event":"didBecomeUnavailable"' "$WORK/events.out"
check "unlock" unlock_device
check "the unlock's event came" within 60 has_line '"event":"didBecomeAvailable"' "$WORK/events.out"
check "standard output has events only, one JSON object a line" json_events_only "$WORK/events.out"

# --quiet: the same events, nothing on standard error. Its subscription is seen by the
# daemon's writer thread for it (one per subscriber).
"$DPFS" events "$MNT" --quiet > "$WORK/quiet.out" 2> "$WORK/quiet.err" &
quiet=$!
subscribers="$subscribers $quiet"
check "dpfs events --quiet subscribes" within 60 writers_are 2
check "lock --now again" "$DPFS" lock "$MNT" --now
check "--quiet gets the lock's event" within 60 has_line '"event":"didBecomeUnavailable"' "$WORK/quiet.out"

# A locked device says so in the line.
"$DPFS" events "$MNT" > /dev/null 2> "$WORK/locked.err" &
subscribers="$subscribers $!"
check "a third subscriber says it subscribed" within 60 subscribed "$WORK/locked.err"
check "with the state locked" grep -qx "dpfs events: subscribed to $MNT (state: locked)" "$WORK/locked.err"

check "unmount" "$DPFS" unmount "$MNT"
check "dpfs events ends at the unmount" within 60 gone "$subscriber"
wait "$subscriber"
expect_eq "with status 0" "$?" "0"
check "dpfs events --quiet ends too" within 60 gone "$quiet"
wait "$quiet"
expect_eq "with status 0, too" "$?" "0"
expect_eq "and wrote nothing on standard error" "$(cat "$WORK/quiet.err")" ""
expect_eq "the first wrote only its line there" "$(wc -l < "$WORK/events.err")" "1"
finish
