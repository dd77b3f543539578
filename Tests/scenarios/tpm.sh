#!/usr/bin/env bash
# Issue 15: the tpm2 secret store against a software TPM (swtpm) the test
# starts on a free loopback port and stops by its pid, even on failure. The device
# secret is sealed to the TPM (class none works before first unlock), every passcode
# check is a TPM authorization (wrong ones raise the TPM's lockout counter, up to its
# dictionary-attack lockout), the device's record lives in an NV index, and a copy of
# the device directory without that TPM does not mount.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/swtpm.bash"
lockout_counter() { "$DPFS" tpm-lockout "$TCTI" | sed -n 's/^counter \([0-9]*\) .*/\1/p'; }

start_swtpm "$WORK/tpm-a"
# Three tries before lockout; one try back every 3 s.
check "the test sets the software TPM's lockout parameters" "$DPFS" tpm-lockout "$TCTI" --set 3,3,3
expect_eq "the lockout counter starts at 0" "$(lockout_counter)" 0

"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "tpm2:$TCTI" >/dev/null || { fail "init with tpm2"; finish; }
pass "init --secret-store tpm2:$TCTI"
expect_eq "the keybag names the TPM store" \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["secretStore"])' "$DEV/keybag.json")" "tpm2:$TCTI"
expect_eq "no secret file anywhere: nothing was made in a file store" "$(ls "$SECRETS" 2>/dev/null)" ""
mount_device
expect_eq "mounted before first unlock" "$(state_of)" beforeFirstUnlock
check "unlock" unlock_device
check "a class-none file" sh -c "printf always > '$MNT/Documents/none.txt' && '$DPFS' protection set none '$MNT/Documents/none.txt'"
echo secret > "$MNT/Documents/c.txt"
"$DPFS" protection set complete "$MNT/Documents/c.txt"
check "lock --now" "$DPFS" lock "$MNT" --now
check_fails "a complete file is unreadable while locked" cat "$MNT/Documents/c.txt"
check "unlock again" unlock_device
expect_eq "the complete file reads" "$(cat "$MNT/Documents/c.txt")" secret
check "restart" "$DPFS" restart "$MNT"
expect_eq "the class-none file reads before first unlock (its key needs no passcode)" "$(cat "$MNT/Documents/none.txt")" always
check "unlock after restart" unlock_device
"$DPFS" unmount "$MNT" || fail "unmount"
mount_device
expect_eq "after a remount, the class-none file reads before first unlock" "$(cat "$MNT/Documents/none.txt")" always
check "unlock after remount" unlock_device
expect_eq "a successful unlock made no TPM failure" "$(lockout_counter)" 0

# Every wrong passcode is a failed TPM authorization; the same one twice counts once.
"$DPFS" lock "$MNT" --now
attempt() { printf 'wrong%s\n' "$1" > "$WORK/w"; chmod 600 "$WORK/w"; "$DPFS" unlock "$MNT" --passcode-file "$WORK/w" 2>&1; }
check_error "wrong passcode 1" "wrong passcode (1 failed attempt)" attempt 1
expect_eq "the TPM's lockout counter is 1" "$(lockout_counter)" 1
check_error "the same wrong passcode again" "wrong passcode (1 failed attempt)" attempt 1
expect_eq "a repeat does not spend a TPM try" "$(lockout_counter)" 1
check_error "wrong passcode 2" "wrong passcode (2 failed attempts)" attempt 2
expect_eq "the TPM's lockout counter is 2" "$(lockout_counter)" 2
check_error "wrong passcode 3" "wrong passcode (3 failed attempts)" attempt 3
expect_eq "the TPM's lockout counter is 3" "$(lockout_counter)" 3
# The TPM's lockout is a passcode delay (exit 13): one line says so, and how long it
# can last from what the TPM tells (its counter 3 of 3, one failure forgotten every 3 s).
out=$(attempt 4); status=$?
expect_eq "the TPM's lockout refuses the next attempt with exit 13" "$status" 13
case "$out" in
    "Error: the TPM's dictionary-attack lockout is in force (3 failed authorizations, 3 allowed): no passcode was tried; it ends within 3 s"*)
        pass "one line names the TPM's lockout and when it ends at the latest" ;;
    *) fail "one line names the TPM's lockout and when it ends at the latest" "$out" ;;
esac
expect_eq "that is one line" "$(printf '%s\n' "$out" | wc -l)" 1
out=$("$DPFS" unlock "$MNT" --passcode-file "$PASS" 2>&1); status=$?
expect_eq "even the right passcode, during the lockout, exits 13" "$status" 13
check "naming the TPM's lockout" grep -q "dictionary-attack lockout is in force" <<<"$out"
status_json=$("$DPFS" status "$MNT" --json)
expect_eq "dpfs counts the guesses the TPM judged: 3" "$(json_field failedAttempts <<<"$status_json")" 3
expect_eq "status --json shows the TPM's lockout" \
    "$(python3 -c 'import json,sys; t=json.load(sys.stdin)["tpmLockout"]; print(t["failures"], t["maxTries"], t["recoveryTime"], 0 < t["retryAfter"] <= 3)' <<<"$status_json")" \
    "3 3 3 True"
check "and its estimated retry time, as a passcode delay's" \
    python3 -c 'import json,sys; assert 0 < json.load(sys.stdin)["retryAfter"] <= 3' <<<"$status_json"
status_text=$("$DPFS" status "$MNT")
check "status shows the TPM's lockout" grep -q "^TPM lockout: in force (3 failed authorizations, 3 allowed); it ends within [1-3] s" <<<"$status_text"
check "and when the next attempt can be made" grep -q "^next attempt in: [1-3] s at most" <<<"$status_text"
check "after the TPM's recovery time the right passcode unlocks" within 30 unlock_device
check_fails "status no longer shows a TPM lockout" grep -q "TPM lockout" <<<"$("$DPFS" status "$MNT")"
# A passcode change seals a new gate: the new passcode works, the old one is wrong.
printf '5678\n' > "$WORK/new"; chmod 600 "$WORK/new"
check "passcode change" "$DPFS" passcode change "$MNT" --passcode-file "$PASS" --new-passcode-file "$WORK/new"
"$DPFS" lock "$MNT" --now
check "the new passcode unlocks" "$DPFS" unlock "$MNT" --passcode-file "$WORK/new"
check "and back" "$DPFS" passcode change "$MNT" --passcode-file "$WORK/new" --new-passcode-file "$PASS"
"$DPFS" unmount "$MNT" || fail "unmount"

# The record lives in the TPM's NV index: an old copy of the device directory is refused.
cp -a "$DEV" "$WORK/old-device"
mount_device
"$DPFS" lock "$MNT" --now 2>/dev/null
sleep 4  # let the TPM give back a try
attempt 5 >/dev/null
"$DPFS" unmount "$MNT" || fail "unmount"
cp -a "$DEV" "$WORK/new-device"
rm -rf "$DEV"; cp -a "$WORK/old-device" "$DEV"
check_error "an old copy is refused by the record in the TPM" \
    "the keybag is older than the device's record in secret store tpm2:$TCTI" "$DPFS" mount "$DEV" "$MNT"
rm -rf "$DEV"; cp -a "$WORK/new-device" "$DEV"

# Another TPM on the same port: the copy of the device directory cannot be mounted.
stop_swtpm
start_swtpm "$WORK/tpm-b"
UUID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["deviceUUID"])' "$DEV/keybag.json")
out=$("$DPFS" mount "$DEV" "$MNT" 2>&1) && fail "another TPM cannot mount the device" "it mounted" || {
    case "$out" in *"device $UUID"*"secret store tpm2:$TCTI"*) pass "another TPM: one line names the device and the store" ;;
        *) fail "another TPM: one line names the device and the store" "$out" ;; esac
    expect_eq "that is one line" "$(printf '%s\n' "$out" | wc -l)" 1; }
stop_swtpm
out=$("$DPFS" mount "$DEV" "$MNT" 2>&1) && fail "no TPM at all: refused" "it mounted" || {
    case "$out" in *"$TCTI"*) pass "no TPM at all: refused with one line naming it" ;;
        *) fail "no TPM at all: refused with one line naming it" "$out" ;; esac; }

# The first TPM again: the device mounts and unlocks.
start_swtpm "$WORK/tpm-a"
mount_device
sleep 3
check "back on its own TPM the device unlocks" unlock_device
expect_eq "and its data is there" "$(cat "$MNT/Documents/c.txt")" secret

# A TPM that stops answering while an unlock waits on it: status and a lock still
# answer at once, and the lock, asked for after the unlock began, wins.
check "lock" "$DPFS" lock "$MNT" --now
daemon_pid=$("$DPFS" status "$MNT" --json | json_field pid)
kill -STOP "$SWTPM_PID"
"$DPFS" unlock "$MNT" --passcode-file "$PASS" > "$WORK/stalled-unlock.out" 2>&1 &
unlocking=$!
# Its connection to the stopped TPM (the TCTI opens the control port first) is open.
daemon_waits_on_tpm() {
    ss -tnp state established "( dport = :$PORT or dport = :$((PORT + 1)) )" | grep -q "pid=$daemon_pid,"
}
check "the unlock waits on the stopped TPM" within 30 daemon_waits_on_tpm
check "status answers meanwhile" timeout 10 "$DPFS" status "$MNT"
check "and so does a lock" timeout 10 "$DPFS" lock "$MNT" --now
kill -CONT "$SWTPM_PID"
wait "$unlocking"; unlock_status=$?
check_fails "the unlock that began before the lock fails" test "$unlock_status" = 0
check "saying the lock came meanwhile" grep -q "locked while the passcode was checked" "$WORK/stalled-unlock.out"
expect_eq "the device stays locked" "$("$DPFS" status "$MNT" --json | json_field state)" locked
check "the next unlock opens it" unlock_device
"$DPFS" unmount "$MNT" || fail "unmount"

# forget by UUID reaches the record in the NV index of a TPM on another TCTI than
# the default when --secret-store names it, as init's does.
check_error "--secret-store goes with a UUID, not a device directory" "goes with a device UUID" \
    "$DPFS" forget "$DEV" --secret-store "tpm2:$TCTI"
check_error "a store that is not one is refused" "secret store" "$DPFS" forget "$UUID" --secret-store "nonsense:x"
check "forget UUID --secret-store tpm2:TCTI" sh -c '"$0" forget "$1" --secret-store "$2" | grep -q "^forgot device $1: removed "' \
    "$DPFS" "$UUID" "tpm2:$TCTI"
check_error "the record is gone: a second forget finds nothing there" "no entries of device $UUID in tpm2:$TCTI" \
    "$DPFS" forget "$UUID" --secret-store "tpm2:$TCTI"
check_fails "without its record the device no longer mounts" "$DPFS" mount "$DEV" "$MNT"
stop_swtpm
finish
