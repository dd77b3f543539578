# Shared helpers for the mount scenarios: a private temporary device and mountpoint
# per scenario, always unmounted and removed on exit, even when a check fails.
# Usage: source this file, call setup_device, then check/expect_eq, then finish.
set -u

: "${DPFS:?set DPFS to the dpfs binary}"
PASSES=0
FAILS=0
SCENARIO=$(basename "$0" .sh)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dpfs-$SCENARIO.XXXXXX")
DEV="$WORK/device"
MNT="$WORK/mnt"
PASS="$WORK/pass.txt"
# The device secret's store, outside the device directory and removed with it.
SECRETS="$WORK/secrets"
mkdir -p "$MNT"
mkdir -m 700 "$SECRETS"   # init refuses a file:DIR that does not exist (unless --create)
printf '1234\n' > "$PASS"
chmod 600 "$PASS"  # a passcode file group or others may access is refused

cleanup() {
    local pid=""
    # A scenario's own leftovers outside $WORK (processes it started, by pid; files).
    if declare -F scenario_cleanup >/dev/null; then scenario_cleanup; fi
    if grep -qs " $MNT fuse" /proc/mounts; then
        pid=$(daemon_pid)
        "$DPFS" unmount "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
        # The daemon we started must not outlive the scenario.
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill "$pid" 2>/dev/null; sleep 0.5; kill -9 "$pid" 2>/dev/null; fi
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '  %s\n' "$*"; }

# setup_restore_target BACKUP_NAME: what the backup scenarios share: $NEW (a device
# directory for restore to make), $MNT2 (its mount point, unmounted at exit when
# mounted), $BACKUP ($WORK/BACKUP_NAME), and $PASSWORD and $PASS2 (the backup's password
# and the restored device's passcode, in files only we may read).
setup_restore_target() {
    NEW="$WORK/restored"
    MNT2="$WORK/mnt2"
    BACKUP="$WORK/$1"
    PASSWORD="$WORK/password.txt"
    PASS2="$WORK/pass2.txt"
    mkdir -p "$MNT2"
    printf 'correct horse battery staple\n' > "$PASSWORD"
    printf '5678\n' > "$PASS2"
    chmod 600 "$PASSWORD" "$PASS2"
}

# unmount_restore_target: takes $MNT2's mount down if it is up (scenario_cleanup).
unmount_restore_target() {
    if grep -qs " $MNT2 fuse" /proc/mounts; then
        "$DPFS" unmount "$MNT2" 2>/dev/null || fusermount3 -uz "$MNT2" 2>/dev/null
    fi
}


pass() { PASSES=$((PASSES + 1)); printf 'ok   %s: %s\n' "$SCENARIO" "$1"; }
fail() { FAILS=$((FAILS + 1)); printf 'FAIL %s: %s\n' "$SCENARIO" "$1"; [ -n "${2:-}" ] && printf '     %s\n' "$2"; }

# check "what" command...: the command must succeed.
check() {
    local what=$1; shift
    local out
    if out=$("$@" 2>&1); then pass "$what"; else fail "$what" "exit $?: $(printf '%s' "$out" | head -3)"; fi
}

# check_fails "what" command...: the command must fail.
check_fails() {
    local what=$1; shift
    local out
    if out=$("$@" 2>&1); then fail "$what" "succeeded, expected failure: $(printf '%s' "$out" | head -3)"; else pass "$what"; fi
}

# check_errno "what" "Operation not permitted" command...: must fail with that message.
check_error() {
    local what=$1 message=$2; shift 2
    local out
    # NUL bytes dropped: a damaged file may print them before its error.
    if out=$("$@" 2>&1 | tr -d '\000'; exit "${PIPESTATUS[0]}"); then fail "$what" "succeeded, expected '$message'"
    elif printf '%s' "$out" | grep -q -e "$message"; then pass "$what"
    else fail "$what" "failed, but without '$message': $(printf '%s' "$out" | head -3)"; fi
}

# within SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds, for at most
# SECONDS (a deadline a busy machine meets, not a wait: it returns as soon as it holds).
within() {
    local seconds=$1; shift
    local end=$((SECONDS + seconds))
    while [ $SECONDS -le $end ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    return 1
}

expect_eq() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got '$2', expected '$3'"; fi
}

setup_device() {
    mkdir -p -m 700 "$SECRETS"   # a scenario may have removed it to start again
    "$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS" "$@" >/dev/null || { fail "init"; finish; }
    mount_device
}

mount_device() {
    "$DPFS" mount "$DEV" "$MNT" ${MOUNT_ARGS:-} >/dev/null || { fail "mount"; finish; }
}

unlock_device() {
    "$DPFS" unlock "$MNT" --passcode-file "$PASS"
}

# Inverts the lowest bit of the byte at offset $2 of file $1. Writing a fixed value
# instead changes nothing one time in 256, where the ciphertext held that value.
flip_bit() {
    local byte
    byte=$(od -A n -t u1 -j "$2" -N 1 "$1" | tr -d ' ')
    [ -n "$byte" ] || { echo "flip_bit: $1 has no byte $2" >&2; return 1; }
    printf "\\x$(printf %02x $((byte ^ 1)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# backing PATH: the backing node of PATH in the mount (names are sealed in the backing
# tree; the mount reports the backing inode numbers). Needs the device mounted.
backing() {
    find "$DEV/sandbox" -xdev -inum "$(stat -c %i "$1")" -print -quit
}

# mode_after_other_users_write PATH: creates PATH set-user-ID and set-group-ID (0o6755),
# writes to it as uid 1000 (no CAP_FSETID), and prints the mode it then has.
mode_after_other_users_write() {
    python3 - "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o755)
os.fchmod(fd, 0o6755)
os.setgid(1000); os.setuid(1000)
os.write(fd, b"data")
print(oct(os.fstat(fd).st_mode & 0o7777))
PY
}

# Whether Scripts/fuse-ops can count FUSE requests here (the kernel's fuse tracepoints,
# Linux 6.16 and later); the checks that count them are skipped, and say so, elsewhere.
fuse_ops_available() {
    local tracing=/sys/kernel/tracing
    [ -d "$tracing/events" ] || mount -t tracefs nodev "$tracing" 2>/dev/null
    [ -e "$tracing/events/fuse/fuse_request_send/enable" ]
}

# The pid of the daemon serving the mount at $1 (by default $MNT); empty if none.
daemon_pid() {
    "$DPFS" status "${1:-$MNT}" --json 2>/dev/null | sed -n 's/.*"pid":\([0-9]*\).*/\1/p'
}

# trace_daemon FILE CALLS [STRACE-OPTIONS…]: strace on every thread of the daemon $PID,
# into FILE, its pid in STRACE_PID; returns once all are traced, 1 if they are not
# within 30 s.
trace_daemon() {
    local file=$1 calls=$2 _ task untraced
    shift 2
    strace -f -qq "$@" -p "$PID" -e trace="$calls" -o "$file" 2>/dev/null & STRACE_PID=$!
    for _ in $(seq 600); do
        untraced=0
        for task in /proc/"$PID"/task/*; do
            grep -qs 'TracerPid:[[:space:]]*[1-9]' "$task/status" || untraced=1
        done
        [ "$untraced" = 0 ] && return 0
        sleep 0.05
    done
    return 1
}

# Ends the scenario, failed, unless every tool named is installed.
require_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { fail "$tool is missing (Scripts/setup installs it)"; finish; }
    done
}

# subscribed FILE: the dpfs events whose standard error goes to FILE has said that it
# subscribed (dpfs(1), events): it misses no event from then on.
subscribed() { grep -q '^dpfs events: subscribed to ' "$1" 2>/dev/null; }

state_of() {
    "$DPFS" status "$MNT" --json | sed -n 's/.*"state":"\([a-zA-Z]*\)".*/\1/p'
}

# The top-level field $1 of the JSON object on stdin ("" when absent or null).
json_field() { python3 -c 'import json,sys; v=json.load(sys.stdin).get(sys.argv[1]); print("" if v is None else v)' "$1"; }

# The debug build beside the release one DPFS names (or DPFS_DEBUG): only it has the
# test hooks (dpfs(1), ENVIRONMENT). Sets DEBUG; a scenario without it fails at once.
require_debug_build() {
    DEBUG=${DPFS_DEBUG:-$(dirname "$DPFS")/../debug/dpfs}
    [ -x "$DEBUG" ] && return 0
    fail "no debug build at $DEBUG (swift build; or set DPFS_DEBUG)"
    finish
}

finish() {
    printf '%s: %d passed, %d failed\n' "$SCENARIO" "$PASSES" "$FAILS"
    [ "$FAILS" -eq 0 ]
    exit $?
}
