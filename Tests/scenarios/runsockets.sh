#!/usr/bin/env bash
# A user's daemons keep their control sockets where their environment put them: one
# mounted with XDG_RUNTIME_DIR in $XDG_RUNTIME_DIR/dpfs, one without in /tmp/dpfs-UID,
# and one with a relative XDG_RUNTIME_DIR there too (a relative value is ignored).
# An owner's socket takes any program of the user, so from an app under `dpfs run` of
# either device, the other daemon's socket directory must be empty too (security.md:
# another app cannot lock the device or read its keychain).
source "$(dirname "$0")/lib.sh"
require_tools bwrap setpriv getfattr

USER_WORK="$WORK/user"
# Short, as /run/user/UID is: $WORK may be too deep for a socket path.
USER_RUN=$(mktemp -d /tmp/dpfs-xdg.XXXXXX)
with_runtime() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$USER_WORK" XDG_RUNTIME_DIR="$USER_RUN" "$@"; }
without_runtime() { setpriv --reuid=65534 --regid=65534 --clear-groups env -u XDG_RUNTIME_DIR HOME="$USER_WORK" "$@"; }
# Run from $USER_WORK, where the relative run/ exists, so that a daemon that took the
# value as a path relative to its working directory would succeed in using it.
relative_runtime() {
    (cd "$USER_WORK" && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$USER_WORK" XDG_RUNTIME_DIR=run "$@")
}
scenario_cleanup() {
    grep -qs " $USER_WORK/ma fuse" /proc/mounts && { with_runtime "$DPFS" unmount "$USER_WORK/ma" 2>/dev/null || fusermount3 -uz "$USER_WORK/ma"; }
    grep -qs " $USER_WORK/mb fuse" /proc/mounts && { without_runtime "$DPFS" unmount "$USER_WORK/mb" 2>/dev/null || fusermount3 -uz "$USER_WORK/mb"; }
    grep -qs " $USER_WORK/mc fuse" /proc/mounts && { relative_runtime "$DPFS" unmount "$USER_WORK/mc" 2>/dev/null || fusermount3 -uz "$USER_WORK/mc"; }
    rm -rf "$USER_RUN"
    return 0
}

mkdir -p "$USER_WORK/ma" "$USER_WORK/mb" "$USER_WORK/mc" "$USER_WORK/secrets" "$USER_WORK/run"
chmod 700 "$USER_WORK/secrets" "$USER_WORK/run" "$USER_RUN"
printf '1234\n' > "$USER_WORK/pass"; chmod 600 "$USER_WORK/pass"
chown -R 65534:65534 "$USER_WORK" "$USER_RUN"
chmod 755 "$WORK"
for d in a b c; do
    with_runtime "$DPFS" init "$USER_WORK/$d" --passcode-file "$USER_WORK/pass" \
        --secret-store "file:$USER_WORK/secrets" >/dev/null || fail "init $d"
done
with_runtime "$DPFS" mount "$USER_WORK/a" "$USER_WORK/ma" >/dev/null || { fail "mount a with XDG_RUNTIME_DIR"; finish; }
without_runtime "$DPFS" mount "$USER_WORK/b" "$USER_WORK/mb" >/dev/null || { fail "mount b without"; finish; }
with_runtime "$DPFS" unlock "$USER_WORK/ma" --passcode-file "$USER_WORK/pass" >/dev/null || fail "unlock a"
printf 'a-secret' | with_runtime "$DPFS" keychain add "$USER_WORK/ma" --service bank --data-file - >/dev/null \
    || fail "add a's item"
check "a's socket is in its runtime directory" sh -c "ls '$USER_RUN/dpfs' | grep -q '\.sock$'"
shared=/tmp/dpfs-65534
check "b's socket is in $shared" sh -c "ls '$shared' | grep -q '\.sock$'"

# From b's app, a's socket directory; from a's app, b's.
out=$(without_runtime "$DPFS" run "$USER_WORK/mb" -- sh -c "ls -A '$USER_RUN/dpfs' | wc -l" 2>&1)
expect_eq "from an app of b, a's socket directory is empty" "$out" "0"
out=$(without_runtime "$DPFS" run "$USER_WORK/mb" -- sh -c \
    "for s in '$USER_RUN'/dpfs/*.sock; do DPFS_CONTROL_SOCKET=\$s '$DPFS' keychain find \"\$DPFS_MOUNT\" --service bank; done" 2>&1)
check_fails "and a's item cannot be read through it" sh -c "printf '%s' '$out' | grep -q a-secret"
out=$(with_runtime "$DPFS" run "$USER_WORK/ma" -- sh -c "ls -A '$shared' | wc -l" 2>&1)
expect_eq "from an app of a, b's socket directory ($shared) is empty" "$out" "0"
expect_eq "a is still unlocked" "$(with_runtime "$DPFS" status "$USER_WORK/ma" | head -1)" "state: unlocked"


# A relative XDG_RUNTIME_DIR names no one directory: c's daemon ignores it and uses
# $shared, which every `dpfs run` hides, not run/dpfs under its working directory.
if relative_runtime "$DPFS" mount "$USER_WORK/c" "$USER_WORK/mc" >/dev/null; then
    sock=$(relative_runtime getfattr --absolute-names --only-values -n user.dpfs.control "$USER_WORK/mc")
    expect_eq "with a relative XDG_RUNTIME_DIR the socket's directory is $shared" "$(dirname "$sock")" "$shared"
    check_fails "and nothing is made under the relative path" test -e "$USER_WORK/run/dpfs"
    check "the daemon log says why" grep -q "XDG_RUNTIME_DIR (run) is not an absolute path" "$USER_WORK/c/daemon.log"
    relative_runtime "$DPFS" unmount "$USER_WORK/mc" || fail "unmount c"
else
    fail "mount c with a relative XDG_RUNTIME_DIR"
fi

with_runtime "$DPFS" unmount "$USER_WORK/ma" || fail "unmount a"
without_runtime "$DPFS" unmount "$USER_WORK/mb" || fail "unmount b"
finish
