#!/usr/bin/env bash
# The simulated user's biometry (dpfs biometry) and items behind an access control
# (dpfs keychain --access-control): a read asks the user and takes the queued answer;
# nomatch and cancel fail as iOS answers; five failed matches lock biometry out until
# the passcode, as do a restart and 48 hours without the passcode; re-enrollment
# invalidates .biometryCurrentSet items; the enrollment survives a remount, but an
# older copy of it put back does not; a prompt with no answer fails as cancelled after
# its timeout; queued answers wait until taken, cleared or a restart; a restart ends a
# prompt in progress without taking an answer.
source "$(dirname "$0")/lib.sh"
bio() { "$DPFS" biometry status "$MNT" --json | json_field "$1"; }
find_token() { "$DPFS" keychain find "$MNT" --service bank --account "$1" "${@:2}"; }
# The data of every bank item a find with --authentication-ui skip returns, or its error.
skipping_find() {
    "$DPFS" keychain find "$MNT" --service bank --limit all --return data --authentication-ui skip --json 2>/dev/null \
        | python3 -c 'import base64, json, sys
reply = json.load(sys.stdin)
print(reply.get("error") or ",".join(base64.b64decode(i["data"]).decode() for i in reply["items"]))'
}

setup_device
check "unlock" unlock_device

# --- enrollment ----------------------------------------------------------------------
expect_eq "nothing is enrolled at first" "$(bio enrolled)" "False"
check "enroll Face ID" "$DPFS" biometry enroll "$MNT" --type faceID
expect_eq "enrolled" "$(bio enrolled)" "True"
expect_eq "as Face ID" "$(bio type)" "faceID"
first_domain=$(bio domainState)
expect_eq "an enrollment has a 64-digit domain state" "${#first_domain}" "64"

# --- an item behind .biometryCurrentSet ------------------------------------------------
printf 'token-1' > "$WORK/token"; chmod 600 "$WORK/token"
check "add a token behind biometryCurrentSet, without a prompt" \
    "$DPFS" keychain add "$MNT" --service bank --account current --access-control biometryCurrentSet \
    --accessible WhenUnlockedThisDeviceOnly --data-file "$WORK/token"
printf 'token-2' > "$WORK/token2"; chmod 600 "$WORK/token2"
check "add one behind userPresence" \
    "$DPFS" keychain add "$MNT" --service bank --account presence --access-control userPresence --data-file "$WORK/token2"
check_error "an unknown flag is errSecParam" "accessControl must be" \
    "$DPFS" keychain add "$MNT" --service bank --account bad --access-control faceOnly --data-file "$WORK/token"

expect_eq "attributes come without a prompt, with the flags" \
    "$(find_token current --return attributes --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["attributes"]["accessControl"])')" "8"

check "queue a match" "$DPFS" biometry respond "$MNT" match
expect_eq "a match reads the token" "$(find_token current)" "token-1"
expect_eq "the answer was taken" "$(bio queued)" "0"

check "queue nomatch" "$DPFS" biometry respond "$MNT" nomatch
check_error "nomatch: errSecAuthFailed" "errSecAuthFailed (-25293)" find_token current
check "queue cancel" "$DPFS" biometry respond "$MNT" cancel
check_error "cancel: errSecUserCanceled" "errSecUserCanceled (-128)" find_token current
check_error "authentication-ui fail: errSecInteractionNotAllowed, without asking" \
    "errSecInteractionNotAllowed (-25308)" find_token current --authentication-ui fail
check_error "authentication-ui skip: the item is left out" "errSecItemNotFound (-25300)" \
    find_token current --authentication-ui skip

start=$SECONDS
check_error "no answer queued: the prompt fails as cancelled" "errSecUserCanceled (-128)" find_token current
waited=$((SECONDS - start))
if [ "$waited" -ge 4 ] && [ "$waited" -le 9 ]; then pass "it waited the prompt timeout ($waited s)"
else fail "it waited the prompt timeout" "waited $waited s, expected about 5"; fi

check "the prompt timeout goes down to 1 s" "$DPFS" biometry timeout "$MNT" 1
expect_eq "status shows it" "$(bio promptTimeout | sed 's/\.0$//')" "1"
start=$SECONDS
check_error "no answer in 1 s: cancelled" "errSecUserCanceled (-128)" find_token current
if [ $((SECONDS - start)) -le 3 ]; then pass "after about a second"; else fail "after about a second" "took $((SECONDS - start)) s"; fi
check_error "a timeout above 9 s is refused" "at most 9" "$DPFS" biometry timeout "$MNT" 10

# Answers wait in the daemon, whoever queued them, until a prompt takes them: a test
# that failed before its prompts leaves them to the next test, unless it clears them.
failed_before=$(bio failedMatches)
check "queue answers no prompt takes" "$DPFS" biometry respond "$MNT" nomatch --times 3
check "and a passcode answer" "$DPFS" biometry respond "$MNT" passcode --passcode-file "$PASS"
expect_eq "they outlive the process that queued them" "$(bio queued)" "4"
expect_eq "clear drops them all" "$("$DPFS" biometry clear "$MNT")" "0 answers queued"
expect_eq "status shows none queued" "$(bio queued)" "0"
start=$SECONDS
check_error "a prompt then fails as cancelled, as with none queued" "errSecUserCanceled (-128)" find_token current
if [ $((SECONDS - start)) -ge 1 ]; then pass "after the prompt timeout"; else fail "after the prompt timeout" "took $((SECONDS - start)) s"; fi
expect_eq "no cleared nomatch was counted" "$(bio failedMatches)" "$failed_before"
expect_eq "clearing nothing is fine" "$("$DPFS" biometry clear "$MNT")" "0 answers queued"
check "back to 5 s" "$DPFS" biometry timeout "$MNT" 5

# An answer given while the prompt waits is taken.
( find_token current > "$WORK/late.out" 2>&1; echo $? > "$WORK/late.rc" ) &
reader=$!
within 5 test "$(bio queued)" = 0 || true
check "answer while the prompt waits" "$DPFS" biometry respond "$MNT" match
wait "$reader"
expect_eq "the waiting read gets the token" "$(cat "$WORK/late.out")" "token-1"

# --- lockout after five failed matches -------------------------------------------------
expect_eq "a match resets the failed matches" "$(bio failedMatches)" "0"
check "queue five failed matches" "$DPFS" biometry respond "$MNT" nomatch --times 5
for i in 1 2 3 4; do find_token current >/dev/null 2>&1; done
expect_eq "four failed matches: not yet locked out" "$(bio lockedOut)" "False"
find_token current >/dev/null 2>&1
expect_eq "five failed matches lock biometry out" "$(bio lockedOut)" "True"
expect_eq "status says why" "$(bio lockout)" "failedMatches"
start=$SECONDS
check_error "locked out: errSecAuthFailed" "errSecAuthFailed (-25293)" find_token current
if [ $((SECONDS - start)) -lt 3 ]; then pass "without waiting for an answer"; else fail "without waiting for an answer" "took $((SECONDS - start)) s"; fi
printf 'plain' > "$WORK/plain"; chmod 600 "$WORK/plain"
check "add an item without access control" \
    "$DPFS" keychain add "$MNT" --service bank --account plain --data-file "$WORK/plain"
expect_eq "locked out, authentication-ui skip leaves the protected items out" "$(skipping_find)" "plain"
check "a passcode answer" "$DPFS" biometry respond "$MNT" passcode --passcode-file "$PASS"
expect_eq "userPresence reads with the passcode while biometry is locked out" "$(find_token presence)" "token-2"
expect_eq "the passcode ended the lockout" "$(bio lockedOut)" "False"
check "queue a match" "$DPFS" biometry respond "$MNT" match
expect_eq "a match reads the biometry item again" "$(find_token current)" "token-1"

printf '0000\n' > "$WORK/wrong"; chmod 600 "$WORK/wrong"
check "queue a wrong passcode" "$DPFS" biometry respond "$MNT" passcode --passcode-file "$WORK/wrong"
check_error "a wrong passcode: errSecAuthFailed" "errSecAuthFailed (-25293)" find_token presence
expect_eq "and it counts as a failed passcode attempt" "$("$DPFS" status "$MNT" --json | json_field failedAttempts)" "1"
check "the passcode again" "$DPFS" biometry respond "$MNT" passcode --passcode-file "$PASS"
check "reads" find_token presence

# Lockout again, ended this time by unlocking the device with the passcode.
check "five failed matches" "$DPFS" biometry respond "$MNT" nomatch --times 5
for i in 1 2 3 4 5; do find_token current >/dev/null 2>&1; done
expect_eq "locked out" "$(bio lockedOut)" "True"
check "lock" "$DPFS" lock "$MNT" --now
check "unlock with the passcode" unlock_device
expect_eq "an unlock ends the lockout" "$(bio lockedOut)" "False"

# --- the passcode, not biometry, after a restart and after 48 hours without it ---------
printf 'token-4' > "$WORK/token4"; chmod 600 "$WORK/token4"
check "add one behind biometryAny, readable before the first unlock" \
    "$DPFS" keychain add "$MNT" --service bank --account always --access-control biometryAny \
    --accessible Always --data-file "$WORK/token4"
check "queue answers before a restart" "$DPFS" biometry respond "$MNT" cancel --times 2
check "restart" "$DPFS" restart "$MNT"
expect_eq "a restart drops the queued answers" "$(bio queued)" "0"
expect_eq "after a restart biometry waits for the passcode" "$(bio lockedOut)" "True"
expect_eq "status says why" "$(bio lockout)" "restart"
check "queue a match" "$DPFS" biometry respond "$MNT" match
check_error "before the passcode a match reads nothing: errSecAuthFailed" "errSecAuthFailed (-25293)" \
    find_token always
expect_eq "and the match was not taken" "$(bio queued)" "1"
check "unlock" unlock_device
expect_eq "after the unlock the match reads it" "$(find_token always)" "token-4"
check "the clock moves 47 hours" "$DPFS" clock advance "$MNT" 47h
check "queue a match" "$DPFS" biometry respond "$MNT" match
expect_eq "47 hours after the passcode a match still reads" "$(find_token always)" "token-4"
check "and 61 minutes more" "$DPFS" clock advance "$MNT" 61m
expect_eq "more than 48 hours: biometry waits for the passcode" "$(bio lockedOut)" "True"
expect_eq "status says why" "$(bio lockout)" "passcodeUnused"
start=$SECONDS
check_error "the biometryAny item fails" "errSecAuthFailed (-25293)" find_token always
if [ $((SECONDS - start)) -lt 3 ]; then pass "without waiting for an answer"; else fail "without waiting for an answer" "took $((SECONDS - start)) s"; fi
check "a passcode answer" "$DPFS" biometry respond "$MNT" passcode --passcode-file "$PASS"
expect_eq "userPresence reads with the passcode" "$(find_token presence)" "token-2"
expect_eq "the passcode answer lets biometry answer again" "$(bio lockedOut)" "False"
check "queue a match" "$DPFS" biometry respond "$MNT" match
expect_eq "a match reads it" "$(find_token always)" "token-4"

# A passcode answer proves the user to the prompt; it does not unlock the device.
printf 'token-3' > "$WORK/token3"; chmod 600 "$WORK/token3"
check "add one behind devicePasscode, available after the first unlock" \
    "$DPFS" keychain add "$MNT" --service bank --account afterfirst --access-control devicePasscode \
    --accessible AfterFirstUnlock --data-file "$WORK/token3"
check "lock" "$DPFS" lock "$MNT" --now
check "queue the passcode" "$DPFS" biometry respond "$MNT" passcode --passcode-file "$PASS"
expect_eq "the passcode answer reads it while locked" "$(find_token afterfirst)" "token-3"
expect_eq "the device stays locked" "$(state_of)" "locked"
check "restart" "$DPFS" restart "$MNT"
check "queue the passcode" "$DPFS" biometry respond "$MNT" passcode --passcode-file "$PASS"
check_error "before the first unlock the item is out of reach" "errSecInteractionNotAllowed (-25308)" \
    find_token afterfirst
expect_eq "and the device is still before its first unlock" "$(state_of)" "beforeFirstUnlock"
check "unlock" unlock_device

# A restart ends a prompt in progress at once, without taking an answer: a reboot
# forgets what the user was about to answer, and the answer given after it waits for
# the next prompt.
printf 'token-5' > "$WORK/token5"; chmod 600 "$WORK/token5"
check "add one behind biometryAny" \
    "$DPFS" keychain add "$MNT" --service any --access-control biometryAny --data-file "$WORK/token5"
check "drop the passcode answer the item out of reach left" "$DPFS" biometry clear "$MNT"
check "a 9 s prompt timeout" "$DPFS" biometry timeout "$MNT" 9
prompts_are() { [ "$(bio prompts)" = "$1" ]; }
start=$SECONDS
"$DPFS" keychain find "$MNT" --service any > "$WORK/restarted.out" 2>&1 &
finder=$!
check "the find's prompt waits for an answer" within 30 prompts_are 1
check "restart" "$DPFS" restart "$MNT"
check "answer after the restart" "$DPFS" biometry respond "$MNT" match
wait "$finder"
check "the find fails as the item's class key went with the restart" \
    grep -q "errSecInteractionNotAllowed (-25308)" "$WORK/restarted.out"
if [ $((SECONDS - start)) -lt 8 ]; then pass "at the restart, not at the prompt's timeout"
else fail "at the restart, not at the prompt's timeout" "took $((SECONDS - start)) s"; fi
expect_eq "the answer waits for the next prompt" "$(bio queued)" "1"
expect_eq "no prompt is left" "$(bio prompts)" "0"
check "clear it" "$DPFS" biometry clear "$MNT"
check "back to 5 s" "$DPFS" biometry timeout "$MNT" 5
check "unlock" unlock_device

# --- the enrollment survives a remount; re-enrollment invalidates ---------------------
check "unmount" "$DPFS" unmount "$MNT"
mount_device
check "unlock after the remount" unlock_device
expect_eq "still enrolled after a remount" "$(bio domainState)" "$first_domain"
check "queue a match" "$DPFS" biometry respond "$MNT" match
expect_eq "the token reads after a remount" "$(find_token current)" "token-1"

cp "$DEV/biometry.json" "$WORK/biometry-first.json"
check "re-enroll" "$DPFS" biometry reenroll "$MNT"
second_domain=$(bio domainState)
if [ -n "$second_domain" ] && [ "$second_domain" != "$first_domain" ]; then pass "re-enrollment changes the domain state"
else fail "re-enrollment changes the domain state" "$first_domain -> $second_domain"; fi
check "queue a match" "$DPFS" biometry respond "$MNT" match
check_error "a biometryCurrentSet item is invalid after re-enrollment" "errSecItemNotFound (-25300)" find_token current
expect_eq "without asking" "$(bio queued)" "1"
expect_eq "a userPresence item still reads" "$(find_token presence)" "token-2"
# The first enrollment's file put back (an older copy of the device directory) does
# not bring the invalidated item back: the secret store vouches for the last file only.
check "unmount" "$DPFS" unmount "$MNT"
cp "$WORK/biometry-first.json" "$DEV/biometry.json"
mount_device
check "unlock" unlock_device
expect_eq "an older biometry.json put back mounts as nothing enrolled" "$(bio enrolled)" "False"
check "and the daemon says so" grep -q "biometry.json is not the one last written" "$DEV/daemon.log"
check "queue a match" "$DPFS" biometry respond "$MNT" match
check_error "the invalidated item stays invalid" "errSecItemNotFound (-25300)" find_token current
check "the invalid item can be deleted" "$DPFS" keychain delete "$MNT" --service bank --account current

# --- what needs a passcode, and unenrolling -------------------------------------------
check "unenroll" "$DPFS" biometry unenroll "$MNT"
expect_eq "nothing enrolled" "$(bio enrolled)" "False"
check "enroll Touch ID" "$DPFS" biometry enroll "$MNT" --type touchID
expect_eq "as Touch ID" "$(bio type)" "touchID"
check "unenroll again" "$DPFS" biometry unenroll "$MNT"
expect_eq "nothing enrolled, authentication-ui skip leaves the protected items out" "$(skipping_find)" "plain"
check_error "no enrollment: a biometryCurrentSet add fails" "errSecAuthFailed" \
    "$DPFS" keychain add "$MNT" --service bank --account later --access-control biometryCurrentSet --data-file "$WORK/token"
"$DPFS" biometry respond "$MNT" wink >/dev/null 2>&1
expect_eq "an answer it does not know is a usage error (64)" "$?" "64"
check_error "--times 0 is refused" "times" "$DPFS" biometry respond "$MNT" match --times 0
check "enroll once more" "$DPFS" biometry enroll "$MNT"
check "remove the passcode" "$DPFS" passcode remove "$MNT" --passcode-file "$PASS"
check_error "no passcode: no enrollment" "has no passcode" "$DPFS" biometry enroll "$MNT"
expect_eq "removing the passcode removed the enrollment" "$(bio enrolled)" "False"
"$DPFS" biometry status "$WORK" >/dev/null 2>&1
expect_eq "not a dpfs mount: exit 15" "$?" "15"

# --- a damaged biometry.json ----------------------------------------------------------
check "unmount" "$DPFS" unmount "$MNT"
printf '{"enrolled": tru' > "$DEV/biometry.json"
mount_device
expect_eq "a damaged record mounts as nothing enrolled" "$(bio enrolled)" "False"
check "and the daemon says so" grep -q "biometry.json is damaged" "$DEV/daemon.log"

finish
