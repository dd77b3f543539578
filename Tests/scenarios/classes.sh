#!/usr/bin/env bash
# The class table, cell by cell: open existing, create new, and handles opened before the
# lock, for each class in the locked and beforeFirstUnlock states.
source "$(dirname "$0")/lib.sh"

setup_device
unlock_device
D="$MNT/Documents"
for c in none complete completeUnlessOpen untilFirstAuth; do
    mkdir "$D/$c.d"
    setfattr -n user.dpfs.protection -v "$c" "$D/$c.d"
    echo "content of $c" > "$D/$c.txt"
    setfattr -n user.dpfs.protection -v "$c" "$D/$c.txt"
done
expect_eq "new file inherits its directory's class" \
    "$(touch "$D/complete.d/x" && getfattr --absolute-names --only-values -n user.dpfs.protection "$D/complete.d/x")" "complete"
rm "$D/complete.d/x"

echo "never open at lock" > "$D/completeUnlessOpen.d/closed.txt"
# Handles opened before the lock, held by this shell.
exec 3<"$D/none.txt" 4<"$D/complete.txt" 5<"$D/completeUnlessOpen.txt" 6<"$D/untilFirstAuth.txt"
exec 7>>"$D/complete.txt" 8>>"$D/completeUnlessOpen.txt"

check "lock --now" "$DPFS" lock "$MNT" --now
expect_eq "state locked" "$(state_of)" "locked"

# open existing, locked
check "locked: open none" cat "$D/none.txt"
check_error "locked: open complete → EPERM" "Operation not permitted" cat "$D/complete.txt"
# (a completeUnlessOpen file whose handle is still open keeps its key: a second open works;
#  once the last handle closes, it cannot be reopened — checked below)
check "locked: completeUnlessOpen with an open handle can be opened again" cat "$D/completeUnlessOpen.txt"
check_error "locked: open completeUnlessOpen with no open handle → EPERM" "Operation not permitted" \
    cat "$D/completeUnlessOpen.d/closed.txt"
check "locked: open untilFirstAuth" cat "$D/untilFirstAuth.txt"

# create new, locked
check "locked: create none" sh -c "echo new > '$D/none.d/new'"
check_error "locked: create complete → EPERM" "Operation not permitted" sh -c "echo new > '$D/complete.d/new'"
[ -e "$D/complete.d/new" ] && fail "a refused create leaves nothing behind" || pass "a refused create leaves nothing behind"
check "locked: create completeUnlessOpen (public-key wrap)" sh -c "echo made-while-locked > '$D/completeUnlessOpen.d/new'"
check "locked: create untilFirstAuth" sh -c "echo new > '$D/untilFirstAuth.d/new'"
check_error "locked: completeUnlessOpen made while locked cannot be reopened" "Operation not permitted" \
    cat "$D/completeUnlessOpen.d/new"

# handles opened before the lock
check "locked: read on old none handle" cat <&3
check_error "locked: read on old complete handle → EPERM" "Operation not permitted" cat <&4
check_error "locked: write on old complete handle → EPERM" "Operation not permitted" bash -c 'echo more >&7'
check "locked: read on old completeUnlessOpen handle" cat <&5
check "locked: write on old completeUnlessOpen handle" sh -c 'echo more >&8'
check "locked: read on old untilFirstAuth handle" cat <&6

# metadata is never refused
check "locked: stat complete" stat "$D/complete.txt"
check "locked: rename complete" mv "$D/complete.txt" "$D/complete2.txt"
check "locked: rename back" mv "$D/complete2.txt" "$D/complete.txt"
check "locked: mkdir in complete dir" mkdir "$D/complete.d/sub"
check "locked: chmod complete" chmod 600 "$D/complete.txt"
expect_eq "locked: class readable" "$("$DPFS" protection get "$D/complete.txt")" "complete"
check_error "locked: class change of a complete file → EPERM" "Operation not permitted" \
    setfattr -n user.dpfs.protection -v none "$D/complete.txt"
check_error "locked: making a file complete → EPERM" "Operation not permitted" \
    setfattr -n user.dpfs.protection -v complete "$D/none.txt"
check_error "and dpfs protection set names the new class's key too" "or of the new class is not available" \
    "$DPFS" protection set complete "$D/none.txt"

check_error "locked: truncate of a complete file → EPERM" "Operation not permitted" truncate -s 0 "$D/complete.txt"
check_error "locked: truncate(2) by path to an aligned size → EPERM" "Operation not permitted" \
    python3 -c "import os; os.truncate('$D/complete.txt', 0)"
exec 3<&- 4<&- 5<&- 6<&- 7>&- 8>&-
check_error "locked: completeUnlessOpen not reopenable after last close" "Operation not permitted" \
    cat "$D/completeUnlessOpen.txt"

check "unlock" unlock_device
expect_eq "completeUnlessOpen made while locked, after unlock" "$(cat "$D/completeUnlessOpen.d/new")" "made-while-locked"
expect_eq "completeUnlessOpen append while locked kept" "$(cat "$D/completeUnlessOpen.txt")" "content of completeUnlessOpen
more"
expect_eq "complete content intact" "$(cat "$D/complete.txt")" "content of complete"

check "restart" "$DPFS" restart "$MNT"
expect_eq "state beforeFirstUnlock" "$(state_of)" "beforeFirstUnlock"
check "bfu: open none" cat "$D/none.txt"
check_error "bfu: open complete → EPERM" "Operation not permitted" cat "$D/complete.txt"
check_error "bfu: open completeUnlessOpen → EPERM" "Operation not permitted" cat "$D/completeUnlessOpen.txt"
check_error "bfu: open untilFirstAuth → EPERM" "Operation not permitted" cat "$D/untilFirstAuth.txt"
check "bfu: create none" sh -c "echo n > '$D/none.d/bfu'"
check_error "bfu: create complete → EPERM" "Operation not permitted" sh -c "echo n > '$D/complete.d/bfu'"
check "bfu: create completeUnlessOpen" sh -c "echo n > '$D/completeUnlessOpen.d/bfu'"
check_error "bfu: create untilFirstAuth → EPERM" "Operation not permitted" sh -c "echo n > '$D/untilFirstAuth.d/bfu'"

check "unlock after restart" unlock_device
check "class change rewraps: none → complete" setfattr -n user.dpfs.protection -v complete "$D/none.txt"
expect_eq "content unchanged by class change" "$(cat "$D/none.txt")" "content of none"
check "alias accepted (NSFileProtectionCompleteUnlessOpen)" \
    setfattr -n user.dpfs.protection -v NSFileProtectionCompleteUnlessOpen "$D/none.txt"
expect_eq "alias canonicalised" "$("$DPFS" protection get "$D/none.txt")" "completeUnlessOpen"
check "letter alias accepted (C)" "$DPFS" protection set C "$D/none.txt"
expect_eq "letter alias canonicalised" "$("$DPFS" protection get "$D/none.txt")" "untilFirstAuth"
check_error "invalid class → EINVAL" "Invalid argument" setfattr -n user.dpfs.protection -v bogus "$D/none.txt"
expect_eq "invalid class changes nothing" "$("$DPFS" protection get "$D/none.txt")" "untilFirstAuth"
check_fails "dpfs protection set rejects an unknown class" "$DPFS" protection set bogus "$D/none.txt"

# A name is bytes, not text: dpfs protection takes each path as the bytes it was given,
# and prints them back as they are, so names that show alike stay apart.
BAD="$D/bad"$'\xff\xfe'"name"
BAD2="$D/bad"$'\xfe\xff'"name"
printf 'bytes\n' > "$BAD"
printf 'bytes\n' > "$BAD2"
check "protection set on a name that is not UTF-8" "$DPFS" protection set complete "$BAD"
check "and on a second that shows alike" "$DPFS" protection set none "$BAD2"
expect_eq "protection get on a name that is not UTF-8" "$("$DPFS" protection get "$BAD")" "complete"
expect_eq "setfattr's view agrees" "$(getfattr --only-values -n user.dpfs.protection "$BAD")" "complete"
expect_eq "each of two names that show alike, by its own bytes" "$("$DPFS" protection get "$BAD" -- "$BAD2")" \
    "$BAD: complete
$BAD2: none"
finish
