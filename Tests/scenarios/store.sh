#!/usr/bin/env bash
# The store a user gets (dpfs(1), init --secret-store and forget): init says which
# secret store it chose and why (the TPM where /dev/tpmrm0 answers, else the file store
# and where); status and fsck name the store; `dpfs forget` removes a device's entries,
# by directory or by UUID, and refuses a mounted device (also by UUID, while its daemon
# holds the device's use lock); and another user who made
# /tmp/dpfs-UID first cannot keep a user without XDG_RUNTIME_DIR from mounting; a
# runtime directory too deep for a socket path is passed over for /tmp/dpfs-UID.
source "$(dirname "$0")/lib.sh"

uuid_of() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["deviceUUID"])' "$1/keybag.json"; }

# A file:DIR that does not exist is refused (a typo would hide the device secret), and
# nothing is made; --create makes it.
MISSING="$WORK/no-such-secrets"
check_error "init refuses a file: store that does not exist" "does not exist; make it, or add --create" \
    "$DPFS" init "$WORK/typo-device" --passcode-file "$PASS" --secret-store "file:$MISSING"
check_fails "and makes neither the store nor the device" test -e "$MISSING" -o -e "$WORK/typo-device"
check "init --create makes it" "$DPFS" init "$WORK/typo-device" --passcode-file "$PASS" \
    --secret-store "file:$MISSING" --create
check "and it holds the new device's secret" test -e "$MISSING/$(uuid_of "$WORK/typo-device").secret"

out=$("$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS")
case "$out" in *"secret store: file:$SECRETS (as asked)"*) pass "init names the store it was given" ;;
               *) fail "init names the store it was given" "$out" ;; esac
mount_device
expect_eq "status names the store" "$("$DPFS" status "$MNT" | grep '^secret store:')" "secret store: file:$SECRETS"
check "status --json too" sh -c "'$DPFS' status '$MNT' --json | grep -q '\"secretStore\":\"file:'"
uuid=$(uuid_of "$DEV")
check_error "forget refuses a mounted device" "already mounted" "$DPFS" forget "$DEV"
check "and its secret is still there" test -e "$SECRETS/$uuid.secret"
"$DPFS" unmount "$MNT"
expect_eq "fsck names the store" "$("$DPFS" fsck "$DEV" --passcode-file "$PASS" | head -1)" "secret store: file:$SECRETS"

out=$("$DPFS" forget "$DEV")
expect_eq "forget by directory" "$?" "0"
case "$out" in *"forgot device $uuid: removed $SECRETS/$uuid.secret, $SECRETS/$uuid.state"*) pass "and says what it removed" ;;
               *) fail "and says what it removed" "$out" ;; esac
check_fails "the secret is gone" test -e "$SECRETS/$uuid.secret"
check_fails "the record too" test -e "$SECRETS/$uuid.state"
check_error "the device no longer mounts, with one clear line" "device $uuid" "$DPFS" mount "$DEV" "$MNT"
expect_eq "and the refused mount leaves no file of it in the store" "$(ls "$SECRETS" | grep "^$uuid")" ""
check_error "forget again: nothing left" "no entries of device $uuid" "$DPFS" forget "$DEV"

# By UUID, in the default store of the user (root: /var/lib/dpfs), the directory gone.
if [ "$(id -u)" = 0 ]; then
    DEFAULT_DEV="$WORK/default-device"
    out=$("$DPFS" init "$DEFAULT_DEV" --passcode-file "$PASS")
    if [ -e /dev/tpmrm0 ]; then
        log "this machine has /dev/tpmrm0: the default store there is checked by hand only"
    else
        case "$out" in *"secret store: file:/var/lib/dpfs (no usable TPM at /dev/tpmrm0"*) pass "without a TPM, init says it uses the file store, and where" ;;
                       *) fail "without a TPM, init says it uses the file store, and where" "$out" ;; esac
    fi
    default_uuid=$(uuid_of "$DEFAULT_DEV")
    if [ -e "/var/lib/dpfs/$default_uuid.secret" ]; then
        # Its daemon holds the device's use lock: forget by UUID refuses, as by directory.
        "$DPFS" mount "$DEFAULT_DEV" "$MNT" >/dev/null || fail "mount the device of the default store"
        out=$("$DPFS" forget "$default_uuid" 2>&1); rc=$?
        expect_eq "forget by UUID refuses a mounted device, with the directory form's status, in one line" \
            "$rc $(printf '%s\n' "$out" | wc -l)" "1 1"
        case "$out" in *"device $default_uuid is mounted from $DEFAULT_DEV on $MNT: its entries cannot be removed; unmount it first") pass "naming where it is mounted" ;;
                       *) fail "naming where it is mounted" "$out" ;; esac
        check "its secret and record stay" test -e "/var/lib/dpfs/$default_uuid.secret" -a -e "/var/lib/dpfs/$default_uuid.state"
        check "and its use lock" test -e "/var/lib/dpfs/$default_uuid.inuse"
        check "the device still unlocks" "$DPFS" unlock "$MNT" --passcode-file "$PASS"
        "$DPFS" unmount "$MNT" || fail "unmount the device of the default store"
    fi
    rm -rf "$DEFAULT_DEV"
    if [ -e "/var/lib/dpfs/$default_uuid.secret" ]; then
        check "forget by UUID after the directory is gone" "$DPFS" forget "$default_uuid"
        check_fails "removes the secret from /var/lib/dpfs" test -e "/var/lib/dpfs/$default_uuid.secret"
        check_fails "and the use lock" test -e "/var/lib/dpfs/$default_uuid.inuse"
    fi
fi
check_error "forget refuses what is neither a directory nor a UUID" "neither a device directory nor a device UUID" \
    "$DPFS" forget "not-a-uuid"

# A squatted /tmp/dpfs-UID: made first by another user (uid 4242), nobody still mounts.
# (An earlier scenario may have left nobody's own there: it is set aside meanwhile.)
USER_WORK="$WORK/nobody"
mkdir -p "$USER_WORK/mnt"
printf '1234\n' > "$USER_WORK/pass"; chmod 600 "$USER_WORK/pass"
chmod 755 "$WORK"; chown -R 65534:65534 "$USER_WORK"
SQUAT=/tmp/dpfs-65534
SET_ASIDE="$WORK/runtime-set-aside"
scenario_cleanup() {
    local m
    for m in "$USER_WORK/mnt" "$USER_WORK/longmnt"; do
        grep -qs " $m fuse" /proc/mounts && fusermount3 -uz "$m"
    done
    if [ -e "$SET_ASIDE" ] || [ "$(stat -c %u "$SQUAT" 2>/dev/null)" = 4242 ]; then rm -rf "$SQUAT"; fi
    [ -e "$SET_ASIDE" ] && mv "$SET_ASIDE" "$SQUAT"
    return 0
}

# A runtime directory too deep for the daemon's sockets (an app session's,
# PID.app-UUID.sock, has the longest name) is passed over for /tmp/dpfs-UID, saying so,
# and dpfs run reaches the daemon: cut short, a socket path would name another file.
LONG_RUN="$USER_WORK/runtime-$(printf 'r%.0s' $(seq 1 70))"
mkdir -p "$LONG_RUN" "$USER_WORK/longmnt"; chown 65534:65534 "$LONG_RUN" "$USER_WORK/longmnt"; chmod 700 "$LONG_RUN"
as_long_runtime() {
    setpriv --reuid=65534 --regid=65534 --clear-groups env XDG_RUNTIME_DIR="$LONG_RUN" HOME="$USER_WORK" "$@"
}
as_long_runtime "$DPFS" init "$USER_WORK/longdev" --passcode-file "$USER_WORK/pass" \
    --secret-store "file:$USER_WORK/secrets" --create > /dev/null || fail "init as nobody"
check "nobody mounts with a runtime directory too deep for a socket" \
    as_long_runtime "$DPFS" mount "$USER_WORK/longdev" "$USER_WORK/longmnt"
check "and unlocks" as_long_runtime "$DPFS" unlock "$USER_WORK/longmnt" --passcode-file "$USER_WORK/pass"
expect_eq "dpfs run reaches the daemon through its app session's socket" \
    "$(as_long_runtime "$DPFS" run "$USER_WORK/longmnt" --no-isolation -- echo ran 2>&1)" "ran"
check "the log says the runtime directory was passed over" \
    grep -q "XDG_RUNTIME_DIR ($LONG_RUN) is too long for a socket path" "$USER_WORK/longdev/daemon.log"
check "which unmounts" as_long_runtime "$DPFS" unmount "$USER_WORK/longmnt"

[ -e "$SQUAT" ] && mv "$SQUAT" "$SET_ASIDE"
mkdir -m 755 "$SQUAT" && chown 4242:4242 "$SQUAT"
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups env -u XDG_RUNTIME_DIR HOME="$USER_WORK" "$@"; }
as_user "$DPFS" init "$USER_WORK/device" --passcode-file "$USER_WORK/pass" \
    --secret-store "file:$USER_WORK/secrets" --create > /dev/null || fail "init as nobody"
check "nobody mounts although another user made $SQUAT" as_user "$DPFS" mount "$USER_WORK/device" "$USER_WORK/mnt"
check "and unlocks through the socket put elsewhere" as_user "$DPFS" unlock "$USER_WORK/mnt" --passcode-file "$USER_WORK/pass"
check "the log says where it went" grep -q "is not a private directory of uid 65534" "$USER_WORK/device/daemon.log"
socket_dir=$(as_user getfattr --only-values -n user.dpfs.control "$USER_WORK/mnt" 2>/dev/null | xargs -r dirname)
expect_eq "a private directory of nobody's" "$(stat -c '%u %a' "$socket_dir" 2>&1)" "65534 700"
check "which unmounts" as_user "$DPFS" unmount "$USER_WORK/mnt"
check_fails "and the directory goes with the daemon" test -e "$socket_dir"
expect_eq "the squatter's directory is left alone" "$(stat -c %u "$SQUAT")" "4242"
finish
