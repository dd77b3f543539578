#!/usr/bin/env bash
# What is reported done is on disk first, in the order a power cut needs, as strace
# shows the calls: restore and init sync the new device's filesystem (syncfs) before
# it takes DEVICE_DIR's name; a shrinking truncate syncs the cut mark and the new last
# block before it cuts the backing file, a growing one the new last block before the
# old one is sealed as ordinary; a directory's class record is synced where the
# keybag records the change (a raise before the keybag, a lowering before the reply).
# Skipped where strace is missing.
source "$(dirname "$0")/lib.sh"

if ! command -v strace >/dev/null; then
    log "skipped: strace is missing"
    finish
fi
STRACE_PID=""
scenario_cleanup() {
    if [ -n "$STRACE_PID" ]; then kill "$STRACE_PID" 2>/dev/null; wait "$STRACE_PID" 2>/dev/null; fi
    unmount_restore_target
}
setup_restore_target durability.dpfsbackup

# line_of FILE PATTERN [first|last]: the number of the first (or last) line of FILE
# matching PATTERN, or 0.
line_of() {
    local found
    if [ "${3:-first}" = last ]; then found=$(grep -n -e "$2" "$1" | tail -1 | cut -d: -f1)
    else found=$(grep -n -m1 -e "$2" "$1" | cut -d: -f1); fi
    printf '%s' "${found:-0}"
}

# trace FILE CALLS: strace on every thread of the daemon, returned once all are traced.
trace() {
    trace_daemon "$1" "$2" -e signal=none && return 0
    fail "strace did not attach to every thread of the daemon"
    finish
}
# untrace FILE PATTERN: strace goes once FILE shows PATTERN. What was traced is done
# (the daemon replies after its last call); the pattern waits out strace's output.
untrace() {
    within 60 grep -q -e "$2" "$1" || log "the trace never showed $2"
    kill "$STRACE_PID"; wait "$STRACE_PID" 2>/dev/null; STRACE_PID=""
}

setup_device
check "unlock" unlock_device
D="$MNT/Documents"
PID=$(daemon_pid)

# --- a shrinking and a growing truncate ----------------------------------------------
head -c 10000 /dev/urandom > "$D/cut"
trace "$WORK/shrink.trace" fdatasync,ftruncate
truncate -s 5000 "$D/cut"
untrace "$WORK/shrink.trace" ftruncate
synced=$(line_of "$WORK/shrink.trace" fdatasync)
cut=$(line_of "$WORK/shrink.trace" ftruncate)
[ "$cut" -gt 0 ] && [ "$synced" -gt 0 ] && [ "$synced" -lt "$cut" ] \
    && pass "a shrinking truncate syncs the mark and the new last block before the cut" \
    || fail "a shrinking truncate syncs the mark and the new last block before the cut" "$(cat "$WORK/shrink.trace")"
expect_eq "and the file holds what it should" "$(stat -c %s "$D/cut")" "5000"

trace "$WORK/grow.trace" fdatasync,pwrite64
truncate -s 20000 "$D/cut"
# The last write of a growth past the last block: the old one sealed as ordinary.
untrace "$WORK/grow.trace" pwrite64
synced=$(line_of "$WORK/grow.trace" fdatasync)
resealed=$(line_of "$WORK/grow.trace" pwrite64 last)
[ "$synced" -gt 0 ] && [ "$synced" -lt "$resealed" ] \
    && pass "a growing truncate syncs the new last block before sealing the old one as ordinary" \
    || fail "a growing truncate syncs the new last block before sealing the old one as ordinary" "$(cat "$WORK/grow.trace")"
expect_eq "and reads whole" "$(head -c 5000 "$D/cut" | wc -c) $(tail -c 15000 "$D/cut" | tr -d '\0' | wc -c)" "5000 0"

# --- a directory's class, raised and lowered -------------------------------------------
mkdir "$D/classed"
# record_synced FILE: whether the fd the record was set on is fsynced after
# the last fsetxattr of the record, and before any later rename (the keybag's).
record_synced() {
    local set fd after
    set=$(line_of "$1" 'user.dpfs.protection' last)
    [ "$set" -gt 0 ] || return 1
    fd=$(sed -n "${set}p" "$1" | sed -n 's/.*fsetxattr(\([0-9]*\),.*/\1/p')
    after=$(tail -n +"$set" "$1" | grep -n -m1 -e "fsync($fd)" -e 'rename' | cut -d: -f2-)
    case "$after" in *"fsync($fd)"*) return 0 ;; *) return 1 ;; esac
}
trace "$WORK/raise.trace" fsetxattr,fsync,rename,renameat,renameat2
"$DPFS" protection set complete "$D/classed"
untrace "$WORK/raise.trace" 'rename'
record_synced "$WORK/raise.trace" && pass "a raised record is synced before the keybag records it" \
    || fail "a raised record is synced before the keybag records it" "$(cat "$WORK/raise.trace")"
trace "$WORK/lower.trace" fsetxattr,fsync,rename,renameat,renameat2
"$DPFS" protection set none "$D/classed"
untrace "$WORK/lower.trace" 'user.dpfs.protection'
record_synced "$WORK/lower.trace" && pass "a lowered record is synced before the reply" \
    || fail "a lowered record is synced before the reply" "$(cat "$WORK/lower.trace")"
expect_eq "the directory has the lowered class" "$("$DPFS" protection get "$D/classed")" "none"

# --- restore and init: the build synced before it is renamed into place -------------------
printf 'restored content\n' > "$D/restored.txt"
check "backup" "$DPFS" backup "$MNT" --to "$BACKUP" --password-file "$PASSWORD"
# synced_before_rename FILE TARGET: FILE shows a syncfs before the rename to TARGET.
synced_before_rename() {
    local synced renamed
    synced=$(line_of "$1" 'syncfs(')
    renamed=$(line_of "$1" "rename.*\"$2\"")
    [ "$synced" -gt 0 ] && [ "$renamed" -gt 0 ] && [ "$synced" -lt "$renamed" ]
}
strace -f -qq -e signal=none -o "$WORK/restore.trace" -e trace=syncfs,rename,renameat,renameat2 \
    "$DPFS" restore "$NEW" --from "$BACKUP" --password-file "$PASSWORD" --passcode-file "$PASS2" \
    --secret-store "file:$SECRETS" >/dev/null 2>"$WORK/restore.err" || fail "restore" "$(head -3 "$WORK/restore.err")"
synced_before_rename "$WORK/restore.trace" "$NEW" && pass "restore syncs the new device before naming it" \
    || fail "restore syncs the new device before naming it" "$(cat "$WORK/restore.trace")"
check "which mounts" "$DPFS" mount "$NEW" "$MNT2"
check "and unlocks" "$DPFS" unlock "$MNT2" --passcode-file "$PASS2"
expect_eq "with the file restored" "$(cat "$MNT2/Documents/restored.txt")" "restored content"

strace -f -qq -e signal=none -o "$WORK/init.trace" -e trace=syncfs,rename,renameat,renameat2 \
    "$DPFS" init "$WORK/fresh" --passcode-file "$PASS" --secret-store "file:$SECRETS" >/dev/null 2>"$WORK/init.err" \
    || fail "init" "$(head -3 "$WORK/init.err")"
synced_before_rename "$WORK/init.trace" "$WORK/fresh" && pass "init syncs the new device before naming it" \
    || fail "init syncs the new device before naming it" "$(cat "$WORK/init.trace")"
finish
