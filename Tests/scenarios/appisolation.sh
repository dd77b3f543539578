#!/usr/bin/env bash
# An app is only itself (docs/security.md): a program under `dpfs run --app X` acts
# only as X on its app socket, and in its own view (bubblewrap) it cannot reach the
# device's owner socket, the device directory, the secret store, other dpfs mounts,
# the directories and file stores of other devices and the default file store,
# or another app's container. --device-control keeps lock/unlock for test processes.
source "$(dirname "$0")/lib.sh"
require_tools bwrap
setup_device
unlock_device

plist() {
    cat <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict>
	<key>application-identifier</key><string>EVIL000001.$1</string>
	<key>keychain-access-groups</key><array><string>EVIL000001.$1</string></array>
</dict></plist>
PLIST
}
plist com.evil.widget > "$WORK/evil.plist"
"$DPFS" app add "$MNT" --entitlements "$WORK/evil.plist" >/dev/null || fail "register com.evil.widget"
printf 'the app secret' | "$DPFS" keychain add "$MNT" --service bank --account me >/dev/null || fail "add the app's item"
echo "the app's document" > "$MNT/Documents/private.txt"

as_evil() { "$DPFS" run "$MNT" --app com.evil.widget -- "$@"; }
as_app() { "$DPFS" run "$MNT" -- "$@"; }

# Before any other app has run: the sandbox's app tries to plant a file in the
# container another app will get (checked under Containers, below).
as_app sh -c 'mkdir -p "$HOME/.containers/com.evil.widget/Documents" && echo planted > "$HOME/.containers/com.evil.widget/Documents/planted.txt"' 2>/dev/null

# Identity comes from the session, not from the request.
check_error "another app's item, named by --app, is refused" "cannot act as com.example.app" \
    as_evil "$DPFS" keychain find "$MNT" --app com.example.app --service bank --account me
out=$(as_evil "$DPFS" keychain find "$MNT" --app com.example.app --service bank --account me 2>&1)
expect_eq "the refusal is errSecMissingEntitlement and shows no secret" \
    "$(printf '%s' "$out" | grep -c -e 'the app secret')$(printf '%s' "$out" | grep -c -e '-34018')" "01"
check_error "its own keychain does not hold the other app's item" "errSecItemNotFound" \
    as_evil "$DPFS" keychain find "$MNT" --service bank --account me
expect_eq "the sandbox's own app finds its item" \
    "$(as_app "$DPFS" keychain find "$MNT" --service bank --account me 2>&1)" "the app secret"
check_error "the owner's shell may still name the app" "the app secret" \
    sh -c "'$DPFS' keychain find '$MNT' --app com.example.app --service bank --account me; exit 1"
check_error "unsetting the app socket leaves no way to the owner's socket" "not a dpfs mount owned by you\|cannot reach" \
    as_evil env -u DPFS_CONTROL_SOCKET "$DPFS" keychain find "$MNT" --app com.example.app --service bank --account me
check_error "an app cannot start a session as another app" "only the device's owner" \
    as_evil "$DPFS" run "$MNT" --app com.example.app --no-isolation -- true
check_error "an app cannot register apps" "only the device's owner" \
    as_evil "$DPFS" app add "$MNT" --entitlements "$WORK/evil.plist"

# Device control.
check_error "an app cannot lock the device" "may not control the device" as_app "$DPFS" lock "$MNT" --now
expect_eq "so the device is still unlocked" "$(state_of)" "unlocked"
check "--device-control lets a test lock" "$DPFS" run "$MNT" --device-control -- "$DPFS" lock "$MNT" --now
expect_eq "and the lock happened" "$(state_of)" "locked"
check "--device-control lets a test unlock" sh -c "'$DPFS' run '$MNT' --device-control -- '$DPFS' unlock '$MNT' --passcode-file /dev/stdin < '$PASS'"
expect_eq "and the unlock happened" "$(state_of)" "unlocked"
check "an app may read the device's status" as_app "$DPFS" status "$MNT"

# What the program sees.
socket_dir=$(dirname "$(as_app sh -c 'echo $DPFS_CONTROL_SOCKET')")
expect_eq "the owner's socket directory holds only the app's socket" \
    "$(as_app sh -c 'ls -A "$(dirname "$DPFS_CONTROL_SOCKET")" | grep -vc "\.app-"')" "0"
expect_eq "the device directory is empty" "$(as_app ls -A "$DEV" | wc -l)" "0"
expect_eq "the secret store is empty" "$(as_app ls -A "$SECRETS" | wc -l)" "0"
# Also when the caller's working directory is inside them: the program starts in its
# container instead, not in a directory the view lays an empty one over.
expect_eq "the device directory is empty from a working directory inside it" \
    "$(cd "$DEV/sandbox" && as_evil ls -A "$DEV" | wc -l)" "0"
expect_eq "which the program does not start in" "$(cd "$DEV/sandbox" && as_evil pwd)" "$(realpath "$MNT")"
expect_eq "the secret store is empty from a working directory inside it" \
    "$(cd "$SECRETS" && as_evil ls -A "$SECRETS" | wc -l)" "0"
expect_eq "nor is its secret file there as ." "$(cd "$SECRETS" && as_evil ls -A . | grep -c '\.secret$')" "0"
# Descriptors the caller holds open do not reach the program: one of the mount's root
# is the sandbox's app's container and .containers, one of the device directory its
# keychain, seen from outside the view.
# with_fd7 PATH COMMAND...: COMMAND with descriptor 7 open on PATH.
with_fd7() { local path=$1; shift; "$@" 7<"$path"; }
expect_eq "only standard input, output and error reach the program" \
    "$( (exec 7<"$MNT" 8<"$DEV"; as_evil sh -c 'ls /proc/$$/fd' | tr '\n' ' ') )" "0 1 2 "
check_fails "another app reads no document through an inherited descriptor" \
    with_fd7 "$MNT" as_evil cat /proc/self/fd/7/Documents/private.txt
with_fd7 "$MNT" as_evil sh -c 'echo planted > /proc/self/fd/7/Documents/planted.txt' 2>/dev/null
check_fails "nor writes one there" test -e "$MNT/Documents/planted.txt"
check_fails "nor lists other containers" with_fd7 "$MNT" as_evil ls /proc/self/fd/7/.containers
check_fails "nor reads the keychain through one of the device directory" \
    with_fd7 "$DEV" as_evil test -r /proc/self/fd/7/keychain.sqlite
check_fails "no root capability takes the view apart" as_app umount "$DEV"
daemon=$(daemon_pid)
check_fails "the daemon is not in its /proc" as_app test -e "/proc/$daemon"
expect_eq "the daemon's socket directory still holds its socket" \
    "$(ls "$socket_dir" | grep -c "^$daemon\.sock$")" "1"

# Containers.
expect_eq "the sandbox's app sees its document" "$(as_app cat "$MNT/Documents/private.txt")" "the app's document"
check_fails "another app does not see that document" as_evil cat "$MNT/Documents/private.txt"
check "another app writes in its own Documents" as_evil sh -c 'echo widget > "$HOME/Documents/w.txt"'
expect_eq "which is its container in the mount" "$(cat "$MNT/.containers/com.evil.widget/Documents/w.txt")" "widget"
expect_eq "its HOME is the mountpoint" "$(as_evil sh -c 'echo $HOME')" "$MNT"
expect_eq "the sandbox's app sees .containers as an empty directory" \
    "$(as_app sh -c 'test -d "$1" && ls -A "$1" | wc -l' sh "$MNT/.containers")" "0"
check_fails "nor has planted a file in another app's container" test -e "$MNT/.containers/com.evil.widget/Documents/planted.txt"
other=$(mktemp -d "$WORK/other.XXXXXX")
"$DPFS" init "$other/device" --no-passcode --secret-store "file:$WORK/secrets2" --create >/dev/null
mkdir "$other/mnt"

# A mount point inside the device directory or the secret store's directory would be
# shown in the view with them; one over the device directory covers it from its daemon.
# mount_refused WHAT MESSAGE MOUNTPOINT [OPTION...]: mounting the second device there
# fails with status 1 and MESSAGE and mounts nothing (a mount made anyway is taken down).
mount_refused() {
    local what=$1 message=$2 target=$3 resolved out status
    shift 3
    resolved=$(realpath "$target")
    out=$("$DPFS" mount "$other/device" "$target" "$@" 2>&1)
    status=$?
    if grep -qs " $resolved fuse" /proc/mounts; then
        "$DPFS" unmount "$resolved" >/dev/null 2>&1 || fusermount3 -uz "$resolved"
        fail "$what" "mounted: $out"
    elif [ "$status" = 1 ] && printf '%s' "$out" | grep -q -e "$message"; then pass "$what"
    else fail "$what" "exit $status: $out"; fi
}
mkdir "$other/device/m" "$WORK/secrets2/m"
mount_refused "a mount point inside the device directory is refused" "is inside the device directory" "$other/device/m"
mount_refused "also by another spelling of it" "is inside the device directory" "$other/mnt/../device/m"
ln -s "$other/device" "$WORK/device-link"
mount_refused "or through a symbolic link" "is inside the device directory" "$WORK/device-link/m"
mount_refused "a mount point inside the secret store's directory is refused" \
    "is inside the secret store's directory" "$WORK/secrets2/m"
mount_refused "a mount point over the device directory is refused" "holds the device directory" "$other" -o nonempty
rmdir "$other/device/m" "$WORK/secrets2/m"
"$DPFS" mount "$other/device" "$other/mnt" >/dev/null || fail "mount a second device"
echo theirs > "$other/mnt/Documents/theirs.txt"
expect_eq "another dpfs mount is empty in the view" "$(as_app ls -A "$other/mnt" | wc -l)" "0"
# With another device's directory and its secret, its `none` files and `Always` items
# read without its passcode, and the app could mount it: they are hidden too, and so
# is the default file store, where every device made without file:DIR keeps its
# secret. empty_in_view [RUN...] PATH: how many entries PATH has in the view (nothing
# when the run fails).
empty_in_view() { "${@:1:$#-1}" sh -c 'test -d "$1" && ls -A "$1" | wc -l' sh "${!#}"; }
expect_eq "another mounted device's directory is empty in the view" "$(empty_in_view as_app "$other/device")" "0"
expect_eq "and so is the file secret store its keybag names" "$(empty_in_view as_app "$WORK/secrets2")" "0"
mkdir -p -m 700 "$WORK/state/dpfs" && touch "$WORK/state/dpfs/default.secret"
expect_eq "the default file store is empty in the view" \
    "$(XDG_STATE_HOME="$WORK/state" empty_in_view as_app "$WORK/state/dpfs")" "0"
if [ "$(id -u)" = 0 ] && [ -d /var/lib/dpfs ]; then
    expect_eq "so is root's" "$(empty_in_view as_app /var/lib/dpfs)" "0"
fi
# A device with spaces in its paths, mounted inside the second device's directory: a
# run of it sees its own mount there, and nothing else of that directory.
third="$WORK/with space"
mkdir -p "$third" "$other/device/mnt 3"
"$DPFS" init "$third/device 3" --no-passcode --secret-store "file:$third/store 3" --create >/dev/null \
    || fail "init a third device"
"$DPFS" mount "$third/device 3" "$other/device/mnt 3" >/dev/null || fail "mount a third device"
scenario_cleanup() { "$DPFS" unmount "$other/device/mnt 3" 2>/dev/null; "$DPFS" unmount "$other/mnt" 2>/dev/null; true; }
expect_eq "a device directory with spaces is empty in the view" "$(empty_in_view as_app "$third/device 3")" "0"
expect_eq "and so is a store with spaces" "$(empty_in_view as_app "$third/store 3")" "0"
echo third > "$other/device/mnt 3/Documents/third.txt"
as_third() { "$DPFS" run "$other/device/mnt 3" -- "$@"; }
expect_eq "a run whose mount is inside another device's directory sees its own documents" \
    "$(as_third cat "$other/device/mnt 3/Documents/third.txt")" "third"
expect_eq "and of that directory only the way to its mount" \
    "$(as_third sh -c 'ls -A "$1"' sh "$other/device")" "mnt 3"
"$DPFS" unmount "$other/device/mnt 3" || fail "unmount the third device"
# Another mount whose daemon is stopped: hiding it needs its answer, so the run ends
# within the commands' deadline with a line that names it, and goes on once it answers.
other_pid=$("$DPFS" status "$other/mnt" --json | json_field pid)
scenario_cleanup() {
    kill -CONT "$other_pid" 2>/dev/null
    "$DPFS" unmount "$other/device/mnt 3" 2>/dev/null; "$DPFS" unmount "$other/mnt" 2>/dev/null; true
}
touch "$other/mnt/x" && rm "$other/mnt/x"  # the kernel must ask the daemon for the root again
kill -STOP "$other_pid"
out=$(timeout -s KILL 90 "$DPFS" run "$MNT" -- true 2>&1)
status=$?
kill -CONT "$other_pid"
if [ "$status" = 1 ] && grep -qF "the dpfs daemon of $other/mnt did not answer" <<<"$out" \
        && grep -qF "\`kill -CONT $other_pid\` resumes it" <<<"$out"; then
    pass "a stopped daemon of another mount ends the run with a line naming it and the way on"
else
    fail "a stopped daemon of another mount ends the run with a line naming it and the way on" "exit $status: $out"
fi
check "once it answers, the run goes on" "$DPFS" run "$MNT" -- true
"$DPFS" unmount "$other/mnt" || fail "unmount the second device"

# Without bubblewrap's view the identity still holds on the app socket.
check_error "--no-isolation still acts only as the app" "cannot act as com.example.app" \
    "$DPFS" run "$MNT" --app com.evil.widget --no-isolation -- \
    "$DPFS" keychain find "$MNT" --app com.example.app --service bank --account me
expect_eq "--no-isolation gives another app its container as HOME" \
    "$("$DPFS" run "$MNT" --app com.evil.widget --no-isolation -- sh -c 'echo $HOME')" "$MNT/.containers/com.evil.widget"

# Sessions end with their program.
sessions_left() { [ "$(ls "$socket_dir" | grep -c "^$daemon\.app-")" = 0 ]; }
if within 30 sessions_left; then pass "no app socket outlives its program"; else fail "no app socket outlives its program" "$(ls "$socket_dir")"; fi
finish
