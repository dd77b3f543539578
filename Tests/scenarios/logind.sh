#!/usr/bin/env bash
# The lock follows the session (dpfs mount --lock-on): a fake logind (python-dbusmock's
# logind template) on a private bus, standing in for the system bus, says the screen
# locked (the session's Lock signal, or its LockedHint as desktops set it), the machine
# is going to sleep, or a session ended, and the device locks; a mount in no session
# follows the user's display session; a bus that goes away locks the device until the
# watch follows again; and dpfs-desktop-setup makes a device that does so with
# complete files by default.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3  # Debian's, which has python3-dbusmock
BUS_PID=""
MOCK_PID=""
scenario_cleanup() {
    [ -n "$MOCK_PID" ] && kill "$MOCK_PID" 2>/dev/null && wait "$MOCK_PID" 2>/dev/null
    [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
}
require_tools dbus-daemon dbus-send
$PY -c 'import dbusmock' 2>/dev/null || { fail "python3-dbusmock is installed"; finish; }

# At a fixed path, without the bus's guid: the same address reaches the bus started
# again after it is killed (below).
ADDRESS="unix:path=$WORK/bus"
logind_up() {
    dbus-send --bus="$ADDRESS" --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner \
        string:org.freedesktop.login1 2>/dev/null | grep -q "boolean true"
}
mock() {
    dbus-send --bus="$ADDRESS" --print-reply --dest=org.freedesktop.login1 /org/freedesktop/login1 \
        "org.freedesktop.DBus.Mock.$@" >/dev/null
}
emit() {  # emit MEMBER SIGNATURE PYTHON_ARGS: a signal of logind's Manager
    $PY -c 'import dbus, sys
bus = dbus.bus.BusConnection(sys.argv[1])
manager = bus.get_object("org.freedesktop.login1", "/org/freedesktop/login1")
manager.EmitSignal("org.freedesktop.login1.Manager", sys.argv[2], sys.argv[3], eval(sys.argv[4]),
                   dbus_interface="org.freedesktop.DBus.Mock")' "$ADDRESS" "$@"
}
# A screen locker's word: SetLockedHint on the session, LockedHint in PropertiesChanged.
# python-dbusmock's template has both since 0.19; an older one gets them here.
locked_hint_mock() {
    $PY -c 'import dbus, sys
bus = dbus.bus.BusConnection(sys.argv[1])
session = bus.get_object("org.freedesktop.login1", "/org/freedesktop/login1/session/" + sys.argv[2])
interface = "org.freedesktop.login1.Session"
if "LockedHint" not in session.GetAll(interface, dbus_interface=dbus.PROPERTIES_IFACE):
    mock = dbus.Interface(session, "org.freedesktop.DBus.Mock")
    mock.AddProperty(interface, "LockedHint", False)
    mock.AddMethod(interface, "SetLockedHint", "b", "", "self.UpdateProperties(%r, {\"LockedHint\": args[0]})" % interface)
' "$ADDRESS" "$1"
}
set_locked_hint() {  # set_locked_hint SESSION true|false: what GNOME's or KDE's locker does
    dbus-send --bus="$ADDRESS" --print-reply --dest=org.freedesktop.login1 /org/freedesktop/login1/session/"$1" \
        org.freedesktop.login1.Session.SetLockedHint boolean:"$2" >/dev/null
}
set_display() {  # set_display SESSION|"": logind elects SESSION uid 0's display session (none: "")
    $PY -c 'import dbus, sys
bus = dbus.bus.BusConnection(sys.argv[1])
user = bus.get_object("org.freedesktop.login1", "/org/freedesktop/login1/user/0")
path = "/org/freedesktop/login1/session/" + sys.argv[2] if sys.argv[2] else "/"
user.Set("org.freedesktop.login1.User", "Display", dbus.Struct((sys.argv[2], dbus.ObjectPath(path)), signature="so"),
         dbus_interface=dbus.PROPERTIES_IFACE)' "$ADDRESS" "$1"
}
start_bus() {
    rm -f "$WORK/bus"
    { read -r _; read -r BUS_PID; } < <(dbus-daemon --session --fork --address="$ADDRESS" --print-address=1 --print-pid=1)
    [ -n "$BUS_PID" ] && pass "a private bus for the fake logind" || { fail "a private bus for the fake logind"; finish; }
}
# The fake logind on the bus, with uid 0's sessions c1 and c2.
start_fake_logind() {
    DBUS_SYSTEM_BUS_ADDRESS=$ADDRESS $PY -m dbusmock --system --template logind >"$WORK/mock.log" 2>&1 &
    MOCK_PID=$!
    within 60 logind_up && pass "the fake logind is on the bus" || { fail "the fake logind is on the bus" "$(cat "$WORK/mock.log")"; finish; }
    check "a session c1 of the fake logind" mock AddSession string:c1 string:seat0 uint32:0 string:root boolean:true
    check "and another, c2" mock AddSession string:c2 string:seat0 uint32:0 string:root boolean:false
    # Real logind answers GetUser(uid) with the User's path; the template's version fails.
    check "the fake logind's GetUser" mock AddMethod string:org.freedesktop.login1.Manager string:GetUser string:u string:o \
        'string:ret = "/org/freedesktop/login1/user/%d" % args[0]'
    check "the fake sessions have a LockedHint" locked_hint_mock c1
    locked_hint_mock c2
}
stop_fake_logind() {
    kill "$MOCK_PID" 2>/dev/null; wait "$MOCK_PID" 2>/dev/null
    MOCK_PID=""
}
process_gone() { ! kill -0 "$1" 2>/dev/null; }
stop_bus() {  # and with it the fake logind; killed, so that no client hears of another's leaving
    kill -KILL "$BUS_PID"
    within 60 process_gone "$BUS_PID" && pass "the bus is gone" || fail "the bus is gone"
    stop_fake_logind
    BUS_PID=""
}
start_bus
start_fake_logind

"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS" --default-protection complete >/dev/null \
    || { fail "init"; finish; }
check_error "--lock-on without a session to follow is refused" "uid 0 has no display session and 2 sessions" \
    env -u XDG_SESSION_ID DBUS_SYSTEM_BUS_ADDRESS="$ADDRESS" "$DPFS" mount "$DEV" "$MNT" --lock-on screen-lock
check_error "a session logind does not know is refused" "logind does not know session nope" \
    env XDG_SESSION_ID=nope DBUS_SYSTEM_BUS_ADDRESS="$ADDRESS" "$DPFS" mount "$DEV" "$MNT" --lock-on screen-lock
check_error "an unknown event is a usage error" "not 'lid-close'" "$DPFS" mount "$DEV" "$MNT" --lock-on lid-close
check_fails "and nothing was mounted" grep -qs " $MNT fuse" /proc/mounts

# Mounted as an fstab line would (mount.fuse.dpfs, which finds dpfs on PATH outside an
# install): lock-on=screen-lock+suspend+logout is --lock-on screen-lock,suspend,logout.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
check_error "a system bus that cannot be reached is named" "cannot reach the system bus at unix:path=$WORK/no-bus:" \
    env XDG_SESSION_ID=c1 DBUS_SYSTEM_BUS_ADDRESS="unix:path=$WORK/no-bus" "$DPFS" mount "$DEV" "$MNT" --lock-on screen-lock
# A comma where the helper's -o list wants +: the event that became an option is named.
check_error "lock-on=screen-lock,suspend: the stray event named, with the + spelling" \
    "^Error: unknown mount option 'suspend'; in a mount -o list or an fstab line, lock-on= joins its events with +, as in lock-on=screen-lock+suspend" \
    env XDG_SESSION_ID=c1 DBUS_SYSTEM_BUS_ADDRESS="$ADDRESS" PATH="$(dirname "$DPFS"):$PATH" \
    "$ROOT/Scripts/dist/mount.fuse.dpfs" "$DEV" "$MNT" -o rw,lock-on=screen-lock,suspend
check_fails "and nothing was mounted" grep -qs " $MNT fuse" /proc/mounts
check "mount -o lock-on=screen-lock+suspend+logout" env XDG_SESSION_ID=c1 DBUS_SYSTEM_BUS_ADDRESS="$ADDRESS" \
    PATH="$(dirname "$DPFS"):$PATH" "$ROOT/Scripts/dist/mount.fuse.dpfs" "$DEV" "$MNT" \
    -o grace-period=1,lock-on=screen-lock+suspend+logout
is_state() { [ "$(state_of "$MNT")" = "$1" ]; }
check "unlock" unlock_device
echo "secret" > "$MNT/Documents/note.txt"

check "the session's screen locks" dbus-send --bus="$ADDRESS" --print-reply --dest=org.freedesktop.login1 \
    /org/freedesktop/login1/session/c1 org.freedesktop.login1.Session.Lock
within 60 is_state locked && pass "the device locks after its grace period" || fail "the device locks after its grace period" "$(state_of "$MNT")"
check_fails "and a complete file is unreadable" cat "$MNT/Documents/note.txt"

# A desktop's screen locker never asks for Lock: it sets the session's LockedHint.
check "unlock" unlock_device
check "the screen locker sets LockedHint" set_locked_hint c1 true
within 60 is_state locked && pass "a LockedHint locks the device after its grace period" \
    || fail "a LockedHint locks the device after its grace period" "$(state_of "$MNT")"
check "the screen unlocks (LockedHint false)" set_locked_hint c1 false
screen_unlock_seen() { grep -q "the session's screen unlocked" "$DEV/daemon.log"; }
within 60 screen_unlock_seen && pass "the daemon hears the screen unlock" || fail "the daemon hears the screen unlock"
expect_eq "and the device stays locked until its passcode" "$(state_of "$MNT")" "locked"

check "unlock" unlock_device
# A delay lock on sleep is held, so that logind waits for the lock before it suspends.
sleep_delays() {
    dbus-send --bus="$ADDRESS" --print-reply --dest=org.freedesktop.login1 /org/freedesktop/login1 \
        org.freedesktop.login1.Manager.ListInhibitors | grep -c '"locks the device before the machine sleeps"'
}
holds_sleep_delay() { [ "$(sleep_delays)" = 1 ]; }
holds_no_sleep_delay() { [ "$(sleep_delays)" = 0 ]; }
check "the daemon holds a delay lock on sleep" within 30 holds_sleep_delay
check "the machine is going to sleep" emit PrepareForSleep b "[True]"
within 60 is_state locked && pass "the device locks at once" || fail "the device locks at once" "$(state_of "$MNT")"
check "and lets the sleep go on once locked" within 30 holds_no_sleep_delay
check "the machine resumes" emit PrepareForSleep b "[False]"
check "and the delay lock is held again" within 30 holds_sleep_delay

check "unlock" unlock_device
check "another session ends" emit SessionRemoved so '["c2", "/org/freedesktop/login1/session/c2"]'
check "this session ends" emit SessionRemoved so '["c1", "/org/freedesktop/login1/session/c1"]'
within 60 is_state locked && pass "the device locks when its session ends" || fail "the device locks when its session ends" "$(state_of "$MNT")"
# Signals come in order: had c2's ending locked, its line would be there before c1's.
expect_eq "only its own session's end locked it" "$(grep -c 'the session ended' "$DEV/daemon.log")" "1"
check "the daemon says why it locked" grep -q "the machine is going to sleep: locking now" "$DEV/daemon.log"
check "unmount" "$DPFS" unmount "$MNT"

# A service of the user's systemd (dpfs@.service) is in no session and has no
# XDG_SESSION_ID: the mount follows the user's display session, as logind names it.
check "c1 is uid 0's display session" set_display c1
check "mount without XDG_SESSION_ID" env -u XDG_SESSION_ID DBUS_SYSTEM_BUS_ADDRESS="$ADDRESS" \
    "$DPFS" mount "$DEV" "$MNT" --grace-period 1 --lock-on screen-lock,suspend,logout
check "the daemon says which session it follows" grep -q "the lock follows session c1, uid 0's display session" "$DEV/daemon.log"
check "unlock" unlock_device
check "c1's screen locks" set_locked_hint c1 true
within 60 is_state locked && pass "the device locks with the user's display session" \
    || fail "the device locks with the user's display session" "$(state_of "$MNT")"
check "c1's screen unlocks" set_locked_hint c1 false
# The user logs out and in again while their systemd keeps running.
check "unlock" unlock_device
check "the user logs out: no display session" set_display ""
within 60 is_state locked && pass "the logout locks the device" || fail "the logout locks the device" "$(state_of "$MNT")"
no_session_said() { grep -q "uid 0 has no display session and 2 sessions" "$DEV/daemon.log"; }
within 60 no_session_said && pass "the daemon says it follows no session" || fail "the daemon says it follows no session"
check "the user logs in: c2 is the display session" set_display c2
follows_c2() { grep -q "the lock follows session c2, uid 0's display session" "$DEV/daemon.log"; }
within 60 follows_c2 && pass "the daemon follows the new session" || fail "the daemon follows the new session"
check "unlock" unlock_device
check "c2's screen locks" set_locked_hint c2 true
within 60 is_state locked && pass "the new session's screen lock locks the device" \
    || fail "the new session's screen lock locks the device" "$(state_of "$MNT")"
check "c2's screen unlocks" set_locked_hint c2 false
check "unmount" "$DPFS" unmount "$MNT"

# Losing logind or the bus fails closed: the device locks, status says the lock no
# longer follows, and the watch follows again once logind is back.
check "mount" env XDG_SESSION_ID=c1 DBUS_SYSTEM_BUS_ADDRESS="$ADDRESS" \
    "$DPFS" mount "$DEV" "$MNT" --grace-period 1 --lock-on screen-lock,suspend,logout
lock_on() { "$DPFS" status "$MNT" | sed -n 's/^lock-on: //p'; }
lock_on_json() { "$DPFS" status "$MNT" --json | $PY -c 'import json, sys; print(json.load(sys.stdin)["lockOn"][sys.argv[1]])' "$1"; }
expect_eq "status shows the events and the session followed" "$(lock_on)" "screen-lock,suspend,logout (following session c1)"
expect_eq "and so does --json" "$(lock_on_json following) $(lock_on_json session)" "True c1"
following_again() { [ "$(lock_on)" = "screen-lock,suspend,logout (following session c1)" ]; }
check "unlock" unlock_device
stop_fake_logind  # logind leaves the bus, which stays
within 60 is_state locked && pass "losing logind locks the device" || fail "losing logind locks the device" "$(state_of "$MNT")"
logind_left() { lock_on | grep -q "^screen-lock,suspend,logout (not following: logind left the system bus; locked"; }
within 60 logind_left && pass "status says logind left" || fail "status says logind left" "$(lock_on)"
start_fake_logind
within 60 following_again && pass "the watch follows the session again" || fail "the watch follows the session again" "$(lock_on)"
check "unlock" unlock_device
stop_bus
within 60 is_state locked && pass "losing the bus locks the device" || fail "losing the bus locks the device" "$(state_of "$MNT")"
not_following() { lock_on | grep -q "^screen-lock,suspend,logout (not following: the system bus is gone; locked then, reconnecting"; }
within 60 not_following && pass "status says the lock no longer follows" || fail "status says the lock no longer follows" "$(lock_on)"
expect_eq "and so does --json" "$(lock_on_json following)" "False"
check "unlock, the bus still gone" unlock_device
start_bus
start_fake_logind
within 60 following_again && pass "the watch follows once the bus is back" || fail "the watch follows once the bus is back" "$(lock_on)"
check "a screen lock after the bus came back" set_locked_hint c1 true
within 60 is_state locked && pass "locks the device again" || fail "locks the device again" "$(state_of "$MNT")"
check "the daemon said it lost the bus" grep -q "the system bus is gone.*locking now and reconnecting" "$DEV/daemon.log"
check "unmount" "$DPFS" unmount "$MNT"
# The bus came back without uid 0's display session.
check "c2 is uid 0's display session again" set_display c2

# The desktop profile in one command: a device whose files are complete and that locks
# with the screen, mounted as the systemd user unit mounts it.
setup_out=$(env HOME="$WORK/home" XDG_DATA_HOME= XDG_CONFIG_HOME= "$ROOT/Scripts/dist/dpfs-desktop-setup" \
    laptop --mountpoint "$MNT" --passcode-file "$PASS" --secret-store "file:$SECRETS" --no-enable) \
    && pass "dpfs-desktop-setup" || fail "dpfs-desktop-setup" "$setup_out"
check_fails "with --no-enable it claims no mount" grep -q "mounted at" <<< "$setup_out"
check "and says how to start it" grep -q "nothing is mounted yet; start it with: systemctl --user enable --now dpfs@laptop" <<< "$setup_out"
# A relative --mountpoint is the one made here, written whole for the unit.
mkdir -p "$WORK/here"
(cd "$WORK/here" && env HOME="$WORK/home-rel" XDG_DATA_HOME= XDG_CONFIG_HOME= "$ROOT/Scripts/dist/dpfs-desktop-setup" \
    rel --mountpoint Mnt --passcode-file "$PASS" --secret-store "file:$SECRETS" --no-enable >/dev/null)
check "a relative --mountpoint is written as an absolute path" \
    grep -qx "MOUNTPOINT=$WORK/here/Mnt" "$WORK/home-rel/.config/dpfs/rel.conf"
settings="$WORK/home/.config/dpfs/laptop.conf"
check "writes the unit's settings" test -s "$settings"
check_error "a second setup of the same name changes nothing" "exists already" env HOME="$WORK/home" \
    "$ROOT/Scripts/dist/dpfs-desktop-setup" laptop --mountpoint "$MNT" --passcode-file "$PASS" --secret-store "file:$SECRETS" --no-enable
# What the unit runs (EnvironmentFile, then ExecStart without --foreground), in no
# login session as a service of the user's systemd is: it follows c2, the display session.
unit_mount() { (set -a; . "$settings"; set +a
    env -u XDG_SESSION_ID DBUS_SYSTEM_BUS_ADDRESS="$ADDRESS" "$DPFS" mount "$DEVICE" "$MOUNTPOINT" --grace-period 0 $MOUNT_OPTIONS); }
check "the unit's command mounts it" unit_mount
expect_eq "files are complete by default" "$("$DPFS" status "$MNT" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["defaultProtection"])')" "complete"
check "unlock" unlock_device
echo "desktop" > "$MNT/Documents/mine.txt"
check "the screen locks" set_locked_hint c2 true
within 60 is_state locked && pass "the desktop device locks with the screen" || fail "the desktop device locks with the screen" "$(state_of "$MNT")"
check_fails "and its files are unreadable" cat "$MNT/Documents/mine.txt"

finish
