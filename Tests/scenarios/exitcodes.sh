#!/usr/bin/env bash
# What a script sees: `dpfs --version`, and the distinct exit statuses of dpfs(1) for
# the failures a script must tell apart (usage 64, mount point not empty 10, wrong
# passcode 12, passcode delay 13, device locked 14, not a dpfs mount 15, device not
# found 16, rollback refused 17), each with one line on stderr; an unknown protection
# class is a usage error in one line. Each message says what went wrong and the way on.
# A user's mount: dpfs run where bubblewrap cannot make its sandbox exits 126 saying
# so, and root's unmount is refused as the user's is while a program runs in it.
source "$(dirname "$0")/lib.sh"
require_tools setpriv bwrap
HOLDER=""
RUNNER=""
UNMOUNTER=""
USER_RUNNER=""
USER_DAEMON=""
USER_WORK="$WORK/user"
USER_MNT="$USER_WORK/mnt"
# The user's runtime directory, short as /run/user/UID is: an app socket's path,
# PID.app-UUID.sock in it, must fit a socket address (108 bytes), and $WORK may be deep.
USER_RUN=$(mktemp -d /tmp/dpfs-xdg.XXXXXX)
as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups \
        env HOME="$USER_WORK/home" XDG_RUNTIME_DIR="$USER_RUN" "$@"
}
scenario_cleanup() {
    [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null
    [ -n "$RUNNER" ] && kill "$RUNNER" 2>/dev/null && wait "$RUNNER" 2>/dev/null
    [ -n "$UNMOUNTER" ] && kill "$UNMOUNTER" 2>/dev/null && wait "$UNMOUNTER" 2>/dev/null
    [ -n "$USER_RUNNER" ] && kill "$USER_RUNNER" 2>/dev/null && wait "$USER_RUNNER" 2>/dev/null
    if grep -qs " $USER_MNT fuse" /proc/mounts; then
        as_nobody "$DPFS" unmount "$USER_MNT" 2>/dev/null || fusermount3 -uz "$USER_MNT" 2>/dev/null
    fi
    if [ -n "$USER_DAEMON" ] && kill -0 "$USER_DAEMON" 2>/dev/null; then
        kill "$USER_DAEMON" 2>/dev/null; sleep 0.5; kill -9 "$USER_DAEMON" 2>/dev/null
    fi
    rm -rf "$USER_RUN"
    return 0
}

# exits_with "what" STATUS command...: the command must exit with STATUS, saying one
# line (a usage error adds the usage).
exits_with() {
    local what=$1 want=$2; shift 2
    local out rc
    out=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" -ne "$want" ]; then fail "$what" "exit $rc, expected $want: $(printf '%s' "$out" | head -2)"
    elif [ "$want" -ne 64 ] && [ "$(printf '%s\n' "$out" | grep -c .)" -ne 1 ]; then fail "$what" "not one line: $out"
    else pass "$what"; fi
}

# says_error "what" STATUS MESSAGE command...: the command exits with STATUS, printing
# one line on stderr, "Error: ..." holding MESSAGE (a grep pattern), and no usage.
says_error() {
    local what=$1 want=$2 message=$3; shift 3
    local out rc
    out=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" -ne "$want" ]; then fail "$what" "exit $rc, expected $want: $(printf '%s' "$out" | head -2)"
    elif [ "$(printf '%s\n' "$out" | grep -c .)" -ne 1 ]; then fail "$what" "not one line: $out"
    elif ! printf '%s' "$out" | grep -q -e "^Error: .*$message"; then fail "$what" "not 'Error: ...$message': $out"
    else pass "$what"; fi
}

version=$("$DPFS" --version)
case "$version" in [0-9]*.[0-9]*.[0-9]*) pass "dpfs --version prints a version" ;;
                   *) fail "dpfs --version prints a version" "$version" ;; esac

exits_with "a missing argument is a usage error" 64 "$DPFS" mount
exits_with "an unknown option is a usage error" 64 "$DPFS" status "$MNT" --frobnicate
exits_with "a device directory that is not one: device not found (mount)" 16 "$DPFS" mount "$WORK/nothing" "$MNT"
exits_with "a device directory that is not one: device not found (fsck)" 16 "$DPFS" fsck "$WORK/nothing"
# A device that lost its keybag is not "no device": init would refuse it, and only its
# keybag or a backup brings its files back.
mkdir -p "$WORK/keybagless/sandbox"
says_error "a device without its keybag is named so (mount)" 16 "holds a device's files but no keybag.json" \
    "$DPFS" mount "$WORK/keybagless" "$MNT"
says_error "and by fsck" 16 "holds a device's files but no keybag.json" "$DPFS" fsck "$WORK/keybagless"
exits_with "a directory that is no dpfs mount: not a dpfs mount" 15 "$DPFS" status "$WORK"
exits_with "lock of a directory that is no dpfs mount" 15 "$DPFS" lock "$WORK"
exits_with "unmount of a directory that is no dpfs mount" 15 "$DPFS" unmount "$WORK"
exits_with "a keychain call to a directory that is no dpfs mount" 15 \
    "$DPFS" keychain find "$WORK" --service s
exits_with "dpfs alone: a missing subcommand" 64 "$DPFS"
exits_with "a group without its subcommand: a missing subcommand" 64 "$DPFS" keychain
exits_with "dpfs passcode without its subcommand" 64 "$DPFS" passcode
check "but --help of a group exits 0" "$DPFS" keychain --help
exits_with "a negative duration is a usage error" 64 "$DPFS" clock advance "$WORK" -5
check_error "that names the clock's direction, not a missing argument" "only moves forward" \
    "$DPFS" clock advance "$WORK" -5
# A negative number after a numeric option, given with a space as with "=", is that
# option's own refusal (a usage error), not "a missing value".
for option in --grace-period --inactivity-reboot --user-inactive-period; do
    exits_with "mount $option -1 is a usage error" 64 "$DPFS" mount "$WORK/nothing" "$MNT" "$option" -1
    check_error "that names $option's numbers, not a missing value" "$option needs a" \
        "$DPFS" mount "$WORK/nothing" "$MNT" "$option" -1
done
exits_with "init --erase-after -3 is a usage error" 64 "$DPFS" init "$WORK/never" --no-passcode --erase-after -3
check_error "that names --erase-after's numbers" "--erase-after needs a positive number" \
    "$DPFS" init "$WORK/never" --no-passcode --erase-after -3
exits_with "biometry respond --times -1 is a usage error" 64 "$DPFS" biometry respond "$WORK" match --times -1
check_error "that names --times's numbers" "--times must be at least 1" \
    "$DPFS" biometry respond "$WORK" match --times -1
# A file to read that is not there fails as every such file does: exit 1, saying why.
exits_with "sync join with no invitation file: exit 1" 1 \
    "$DPFS" sync join "$WORK" --server "postgresql://dpfs@127.0.0.1:1/sync" --invitation-file "$WORK/no-invitation"
check_error "naming the file and why" "cannot read invitation file $WORK/no-invitation: No such file or directory" \
    "$DPFS" sync join "$WORK" --server "postgresql://dpfs@127.0.0.1:1/sync" --invitation-file "$WORK/no-invitation"
check_error "a device directory that does not exist is named so" "does not exist" \
    "$DPFS" mount "$WORK/nothing" "$MNT"

# refuses_class "what" command...: an unknown protection class name is a usage error
# too (as an unknown --accessible is), in one line that names the valid classes.
refuses_class() {
    local what=$1; shift
    local out rc
    out=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" -ne 64 ]; then fail "$what" "exit $rc, expected 64: $(printf '%s' "$out" | head -2)"
    elif [ "$(printf '%s\n' "$out" | grep -c .)" -ne 1 ]; then fail "$what" "not one line: $out"
    elif ! printf '%s' "$out" | grep -q "unknown protection class 'bogus'; valid: none, complete, "; then
        fail "$what" "does not name the valid classes: $out"
    else pass "$what"; fi
}
refuses_class "an unknown class is a usage error: protection set" "$DPFS" protection set bogus "$WORK"
refuses_class "init --default-protection" \
    "$DPFS" init "$WORK/new" --default-protection bogus --passcode-file "$PASS" --secret-store "file:$SECRETS"
check_fails "which makes no device" test -e "$WORK/new"
refuses_class "restore --default-protection, before it reads the backup" \
    "$DPFS" restore "$WORK/new" --from "$WORK/no-such-backup" --default-protection bogus
json=$("$DPFS" status "$WORK" --json 2>/dev/null)
expect_eq "status --json says so in JSON too" \
    "$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["exitStatus"], "not a dpfs mount" in d["error"])')" \
    "15 True"

"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS" --default-protection complete >/dev/null \
    || { fail "init"; finish; }
touch "$MNT/stray"
exits_with "a mount point that is not empty is refused" 10 "$DPFS" mount "$DEV" "$MNT"
check_fails "and nothing was mounted" grep -qs " $MNT fuse" /proc/mounts
# A mount option libfuse does not know is named, with dpfs's own spelling where it is
# one of dpfs's options, before anything starts.
says_error "dpfs's own option given to -o: a usage error naming it and its spelling" 64 \
    "unknown mount option 'grace-period=5'; dpfs's own option is --grace-period 5 on the dpfs mount command line" \
    "$DPFS" mount "$DEV" "$MNT" -o nonempty,grace-period=5
says_error "an option no one knows is named" 64 "unknown mount option 'frobnicate'; -o takes FUSE's mount options" \
    "$DPFS" mount "$DEV" "$MNT" -o nonempty -o ro,frobnicate
# The options that name the mount in the mount table are dpfs's: another subtype or
# fsname would make a mount no dpfs command could find again.
says_error "-o subtype= is refused" 64 "the mount option 'subtype=x' is dpfs's own to set" \
    "$DPFS" mount "$DEV" "$MNT" -o nonempty,subtype=x
says_error "-o fsname= is refused" 64 "the mount option 'fsname=other' is dpfs's own to set" \
    "$DPFS" mount "$DEV" "$MNT" -o nonempty -o fsname=other
check_fails "and nothing was mounted" grep -qs " $MNT fuse" /proc/mounts
check "-o nonempty mounts over it" "$DPFS" mount "$DEV" "$MNT" -o nonempty
# The device mounted already: where, and the way on; in the foreground too, in the
# one line every command prints.
mkdir -p "$WORK/mnt2"
says_error "a device mounted already: where, and to unmount it first" 1 \
    "device $DEV is already mounted on $MNT by another dpfs daemon; unmount it first" \
    "$DPFS" mount "$DEV" "$WORK/mnt2"
says_error "the same with --foreground, in one Error: line" 1 \
    "device $DEV is already mounted on $MNT by another dpfs daemon; unmount it first" \
    "$DPFS" mount "$DEV" "$WORK/mnt2" --foreground
says_error "a path inside a mount: the mount point to give" 15 "(it is inside the dpfs mount $MNT; give that mount point)" \
    "$DPFS" status "$MNT/Documents"
# A mount kept busy by a process of the caller's: named, with the ways on.
(cd "$MNT" && exec sleep 600) &
HOLDER=$!
holder_inside() { [ "$(readlink "/proc/$HOLDER/cwd")" = "$MNT" ]; }
within 60 holder_inside || fail "a process works in the mount"
says_error "unmount of a busy mount names what holds it" 1 \
    "cannot unmount $MNT: it is busy: sleep (pid $HOLDER) works in it; .*fusermount3 -u -z $MNT" \
    "$DPFS" unmount "$MNT"
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null; HOLDER=""
# A program run as an app works in the mount from its own mount namespace, where the
# host sees no holder: unmount refuses at once all the same, naming the dpfs run, and
# the mount serves on; once the program ends, the unmount goes through.
"$DPFS" run "$MNT" -- sh -c 'cd "$HOME/Documents" && exec sleep 600' &
RUNNER=$!
runner_started() { [ -n "$(cat "/proc/$RUNNER/task/"*/children 2>/dev/null)" ]; }
within 60 runner_started || fail "dpfs run starts its program"
started=$SECONDS
says_error "unmount while a dpfs run program works in it names the run" 1 \
    "cannot unmount $MNT: programs run in it as apps: .*dpfs run $MNT -- sh -c .* (pid $RUNNER); end them, .*fusermount3 -u -z $MNT" \
    "$DPFS" unmount "$MNT"
took=$((SECONDS - started))
[ "$took" -lt 30 ] && pass "and refuses at once (${took}s)" || fail "and refuses at once" "it took ${took}s"
check "the mount stays" grep -qs " $MNT fuse" /proc/mounts
check "and serves" ls "$MNT/Documents"
check "the program still runs" kill -0 "$RUNNER"
# What refused the unmount, status shows, as the refusal names it.
status_names_run() { "$DPFS" status "$MNT" | grep -q "^app run: .*dpfs run $MNT -- sh -c .* (pid $RUNNER)\$"; }
check "status names the run that holds the mount" status_names_run
expect_eq "status --json lists the run's pid" \
    "$("$DPFS" status "$MNT" --json | python3 -c 'import json,sys; print([r["pid"] for r in json.load(sys.stdin).get("runs", [])])')" \
    "[$RUNNER]"
kill "$RUNNER"; wait "$RUNNER" 2>/dev/null; RUNNER=""
no_runs_shown() {
    ! "$DPFS" status "$MNT" | grep -q "^app run:" && "$DPFS" status "$MNT" --json | python3 -c \
        'import json,sys; sys.exit("runs" in json.load(sys.stdin))'
}
within 60 no_runs_shown && pass "and, once the run has ended, shows none" \
    || fail "and, once the run has ended, shows none" "$("$DPFS" status "$MNT" | grep "^app run:")"
# An unmount that has found no run holds app sessions shut until it ends: a run
# started between its check and its detach is refused. The unmount's request is
# held here on a connection of its own, as `dpfs unmount` holds it while it detaches.
cp "$(dirname "$0")/../tools/controlwire.py" "$WORK/controlwire.py"
cat > "$WORK/unmounting.py" <<'PY'
import os, sys, time
sys.path.insert(0, os.path.dirname(sys.argv[0]))
from controlwire import *
s = connect(sys.argv[1])
s.sendall(request_frame({"unmounting": {}}))
got = reply(s)
with open(sys.argv[2] + ".tmp", "wb") as out: out.write(got or b"")
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
deadline = time.monotonic() + 300
while not os.path.exists(sys.argv[3]) and time.monotonic() < deadline: time.sleep(0.05)
PY
SOCK=$(getfattr --absolute-names --only-values -n user.dpfs.control "$MNT")
python3 "$WORK/unmounting.py" "$SOCK" "$WORK/unmounting.reply" "$WORK/unmounting.end" &
UNMOUNTER=$!
within 60 test -e "$WORK/unmounting.reply" || fail "the unmount's request is answered"
check_error "a run while an unmount detaches is refused, saying why" \
    "the sandbox is being unmounted (dpfs unmount): no app session opens now" "$DPFS" run "$MNT" -- true
check "the mount serves on" ls "$MNT/Documents"
touch "$WORK/unmounting.end"; wait "$UNMOUNTER" 2>/dev/null; UNMOUNTER=""
within 60 "$DPFS" run "$MNT" -- true && pass "and once that unmount has ended, a run goes" \
    || fail "and once that unmount has ended, a run goes" "$("$DPFS" run "$MNT" -- true 2>&1)"
daemon=$("$DPFS" status "$MNT" --json | json_field pid)
expect_eq "the daemon is named dpfs, for pgrep, ps -C and killall" "$(cat "/proc/$daemon/comm" 2>&1)" dpfs
expect_eq "status --json names the daemon's version" "$("$DPFS" status "$MNT" --json | json_field version)" "$version"
# The daemon ends the ended run's session as it sees its connection close: by a
# deadline, as a refused unmount detaches nothing.
within 60 "$DPFS" unmount "$MNT" && pass "unmount, once the program has ended" \
    || fail "unmount, once the program has ended" "$("$DPFS" unmount "$MNT" 2>&1)"
rm -f "$MNT/stray"
cp -a "$DEV" "$WORK/device-before"
mount_device

printf '9999\n' > "$WORK/wrong"; chmod 600 "$WORK/wrong"
exits_with "a wrong passcode" 12 "$DPFS" unlock "$MNT" --passcode-file "$WORK/wrong"
check "the right one unlocks" unlock_device
printf 'secret' > "$WORK/data"; chmod 600 "$WORK/data"
check "an item that needs the device unlocked" "$DPFS" keychain add "$MNT" --service s --account a \
    --accessible WhenUnlocked --data-file "$WORK/data"
check "lock" "$DPFS" lock "$MNT" --now
exits_with "that item while locked: device locked" 14 "$DPFS" keychain find "$MNT" --service s --account a
# Five different wrong passcodes (the same one twice in a row counts once).
for i in 1 2 3 4 5; do
    printf '999%s\n' "$i" > "$WORK/wrong"
    "$DPFS" unlock "$MNT" --passcode-file "$WORK/wrong" >/dev/null 2>&1
done
exits_with "after five failures, the next try: passcode delay in force" 13 \
    "$DPFS" unlock "$MNT" --passcode-file "$PASS"
wait_left=$("$DPFS" status "$MNT" --json | json_field retryAfter)
case "$wait_left" in [1-9]|[1-9][0-9]) pass "status --json gives the wait in whole seconds" ;;
                     *) fail "status --json gives the wait in whole seconds" "retryAfter: $wait_left" ;; esac
check "unmount" "$DPFS" unmount "$MNT"

# The device directory from before the failures, put back: the record refuses it.
rm -rf "$DEV"; cp -a "$WORK/device-before" "$DEV"
exits_with "an older copy of the device: rollback refused" 17 "$DPFS" mount "$DEV" "$MNT"
check_fails "and nothing was mounted" grep -qs " $MNT fuse" /proc/mounts

# A user's mount.
mkdir -p "$USER_MNT" "$USER_WORK/home"
cp "$PASS" "$USER_WORK/pass"
chown -R 65534:65534 "$USER_WORK" "$USER_RUN"
chmod 700 "$USER_WORK/home"
chmod 755 "$WORK"
as_nobody "$DPFS" init "$USER_WORK/device" --passcode-file "$USER_WORK/pass" \
    --secret-store "file:$USER_WORK/secrets" --create >/dev/null || fail "init as nobody"
check "the user mounts" as_nobody "$DPFS" mount "$USER_WORK/device" "$USER_MNT"
USER_DAEMON=$(as_nobody "$DPFS" status "$USER_MNT" --json | json_field pid)

# Where user namespaces are not allowed (a bwrap that forbids them around dpfs run),
# bubblewrap fails before the program starts: run exits 126, not a status the
# program could have given, its last line the Error: that names --no-isolation.
no_userns() { as_nobody bwrap --dev-bind / / --unshare-user --disable-userns --uid 65534 --gid 65534 -- "$@"; }
out=$(no_userns "$DPFS" run "$USER_MNT" -- echo ran 2>&1); rc=$?
expect_eq "run where bubblewrap cannot make the sandbox exits 126" "$rc" "126"
case "$(printf '%s\n' "$out" | tail -1)" in
    "Error: bubblewrap could not make the app's sandbox"*"give --no-isolation") pass "saying so in an Error: line that names --no-isolation" ;;
    *) fail "saying so in an Error: line that names --no-isolation" "$out" ;;
esac
check_fails "the program did not run" grep -qx ran <<<"$out"
expect_eq "with --no-isolation it runs" "$(no_userns "$DPFS" run "$USER_MNT" --no-isolation -- echo ran 2>&1)" "ran"

# Root's unmount of the user's mount refuses, as the user's does, while a program the
# user's dpfs run started works in it, and takes the mount down once it has ended.
# setpriv and env exec dpfs run, so $! is its pid (as_nobody would fork a subshell).
setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$USER_WORK/home" XDG_RUNTIME_DIR="$USER_RUN" \
    "$DPFS" run "$USER_MNT" -- sh -c 'cd "$HOME/Documents" && exec sleep 600' &
USER_RUNNER=$!
user_runner_started() { [ -n "$(cat "/proc/$USER_RUNNER/task/"*/children 2>/dev/null)" ]; }
within 60 user_runner_started || fail "the user's dpfs run starts its program"
says_error "the user's unmount names the run" 1 "cannot unmount $USER_MNT: programs run in it as apps: .*(pid $USER_RUNNER)" \
    as_nobody "$DPFS" unmount "$USER_MNT"
says_error "root's unmount names the run too" 1 "cannot unmount $USER_MNT: programs run in it as apps: .*(pid $USER_RUNNER)" \
    "$DPFS" unmount "$USER_MNT"
check "the mount stays" grep -qs " $USER_MNT fuse" /proc/mounts
check "and serves the user" as_nobody ls "$USER_MNT/Documents"
check "the user's daemon runs on" kill -0 "$USER_DAEMON"
check "the program still runs" kill -0 "$USER_RUNNER"
check_fails "nothing of the mount's going is logged" grep -q "the mount was taken" "$USER_WORK/device/daemon.log"
kill "$USER_RUNNER"; wait "$USER_RUNNER" 2>/dev/null; USER_RUNNER=""
within 60 "$DPFS" unmount "$USER_MNT" && pass "root's unmount, once the program has ended" \
    || fail "root's unmount, once the program has ended" "$("$DPFS" unmount "$USER_MNT" 2>&1)"
check_fails "nothing is mounted" grep -qs " $USER_MNT fuse" /proc/mounts
within 60 sh -c "! kill -0 $USER_DAEMON" && pass "and the user's daemon ends" || fail "and the user's daemon ends"

finish
