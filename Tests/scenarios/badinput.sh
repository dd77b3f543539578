#!/usr/bin/env bash
# Bad input gets one clear line on stderr and a non-zero exit, and changes nothing.
source "$(dirname "$0")/lib.sh"

one_line_error() {  # what, command...: fails with exactly one line on stderr
    local what=$1; shift
    local err
    if "$@" >/dev/null 2>"$WORK/err"; then fail "$what" "succeeded"; return; fi
    err=$(cat "$WORK/err")
    if [ "$(wc -l < "$WORK/err")" -eq 1 ] && [ -n "$err" ]; then pass "$what: $err"
    else fail "$what" "stderr was: $err"; fi
}

mkdir -p "$WORK/full"; touch "$WORK/full/something"
one_line_error "init into a non-empty directory" "$DPFS" init "$WORK/full" --passcode-file "$PASS"
expect_eq "non-empty directory left alone" "$(ls "$WORK/full")" "something"
one_line_error "init with an unknown default class" "$DPFS" init "$WORK/x1" --passcode-file "$PASS" --default-protection bogus
[ -e "$WORK/x1/keybag.json" ] && fail "nothing created for a bad class" || pass "nothing created for a bad class"
: > "$WORK/empty-pass"; chmod 600 "$WORK/empty-pass"
one_line_error "init with an empty passcode file" "$DPFS" init "$WORK/x2" --passcode-file "$WORK/empty-pass"
one_line_error "init with a missing passcode file" "$DPFS" init "$WORK/x3" --passcode-file "$WORK/nope"
check_fails "a failed init leaves no directory it made (x2, x3)" test -e "$WORK/x2" -o -e "$WORK/x3"
mkdir "$WORK/x4"
one_line_error "init of an existing empty directory with an empty passcode" "$DPFS" init "$WORK/x4" --passcode-file "$WORK/empty-pass"
check "leaves that directory, empty" test -d "$WORK/x4" -a -z "$(ls -A "$WORK/x4")"
cp "$PASS" "$WORK/open-pass"; chmod 666 "$WORK/open-pass"
one_line_error "a world-writable passcode file is refused" "$DPFS" init "$WORK/x4" --passcode-file "$WORK/open-pass"

setup_device

mkdir -p "$WORK/mnt2"
one_line_error "mounting the same device twice (existing mountpoint)" "$DPFS" mount "$DEV" "$WORK/mnt2"
grep -qs " $WORK/mnt2 fuse" /proc/mounts && fail "no second mount" || pass "no second mount"
one_line_error "mount on a missing mountpoint" "$DPFS" mount "$DEV" "$WORK/does-not-exist"
one_line_error "mount of a non-device" "$DPFS" mount "$WORK/full" "$WORK/mnt2"

printf 'wrong\n' > "$WORK/wrong"; chmod 600 "$WORK/wrong"
one_line_error "wrong passcode" "$DPFS" unlock "$MNT" --passcode-file "$WORK/wrong"
expect_eq "wrong passcode leaves the device before first unlock" "$(state_of)" "beforeFirstUnlock"
"$DPFS" unlock "$MNT" --passcode-file "$WORK/wrong" 2>"$WORK/err"
grep -q "wrong passcode" "$WORK/err" && pass "the error says the passcode was wrong" || fail "the error says the passcode was wrong" "$(cat "$WORK/err")"
grep -q "wrong" "$DEV/daemon.log" && fail "the passcode never reaches the log" || pass "the passcode never reaches the log"

one_line_error "status of a directory that is not a mount" "$DPFS" status "$WORK/full"
one_line_error "lock of a missing mountpoint" "$DPFS" lock "$WORK/does-not-exist"
one_line_error "unmount of a directory that is not a mount" "$DPFS" unmount "$WORK/full"

# Issue 12, attack 7: a passcode file group or others may read is refused, as ssh
# refuses such a key, and nothing reaches the daemon (no failed attempt is counted).
attempts() { "$DPFS" status "$MNT" --json | sed -n 's/.*"failedAttempts":\([0-9]*\).*/\1/p'; }
before=$(attempts)
for mode in 0644 0640 0604 0660 0606; do
    cp "$PASS" "$WORK/pass-$mode"; chmod "$mode" "$WORK/pass-$mode"
    check_error "a passcode file with mode $mode is refused" \
        "passcode file $WORK/pass-$mode has mode $mode; it must not be accessible by group or others (chmod 600 $WORK/pass-$mode)" \
        "$DPFS" unlock "$MNT" --passcode-file "$WORK/pass-$mode"
done
one_line_error "the refusal is one line" "$DPFS" unlock "$MNT" --passcode-file "$WORK/pass-0644"
expect_eq "refused files leave the device locked" "$(state_of)" "beforeFirstUnlock"
expect_eq "refused files send nothing (no failed attempt)" "$(attempts)" "$before"
cp "$PASS" "$WORK/pass-0400"; chmod 0400 "$WORK/pass-0400"
check "a passcode file with mode 0400 is accepted" "$DPFS" unlock "$MNT" --passcode-file "$WORK/pass-0400"
"$DPFS" lock "$MNT" --now
check "a passcode file with mode 0600 is accepted" "$DPFS" unlock "$MNT" --passcode-file "$PASS"
"$DPFS" lock "$MNT" --now
check "a pipe is accepted" "$DPFS" unlock "$MNT" --passcode-file <(cat "$PASS")
"$DPFS" lock "$MNT" --now
check "unlock with the right passcode still works" unlock_device
one_line_error "protection set with an unknown class" "$DPFS" protection set bogus "$MNT/Documents"
expect_eq "unknown class changes nothing" "$("$DPFS" protection get "$MNT/Documents")" "untilFirstAuth"
one_line_error "protection get outside a mount" "$DPFS" protection get "$WORK/full/something"
one_line_error "protection set outside a mount" "$DPFS" protection set complete "$WORK/full/something"
expect_eq "writes no class attribute on the plain file" \
    "$(getfattr -n user.dpfs.protection "$WORK/full/something" 2>/dev/null | grep -c protection)" "0"
check "a plain file can carry the class attribute" setfattr -n user.dpfs.protection -v complete "$WORK/full/something"
one_line_error "protection get of a plain file that carries the attribute" "$DPFS" protection get "$WORK/full/something"

# A special file has no class (the kernel keeps user.* attributes off it): said so,
# on an unlocked device, rather than blamed on the lock or the mount.
mkfifo "$MNT/Documents/fifo"
ln -s fifo "$MNT/Documents/to-fifo"
check_error "protection get of a FIFO says it is a special file" \
    "fifo: is a special file (FIFO), which has no protection class$" "$DPFS" protection get "$MNT/Documents/fifo"
check_error "protection set of a FIFO too" \
    "fifo: is a special file (FIFO), which has no protection class$" "$DPFS" protection set complete "$MNT/Documents/fifo"
check_error "and of a symbolic link to one" \
    "to-fifo: is a symbolic link to a special file (FIFO), which has no protection class$" \
    "$DPFS" protection set complete "$MNT/Documents/to-fifo"
one_line_error "in one line" "$DPFS" protection get "$MNT/Documents/to-fifo"
echo text > "$MNT/Documents/file"
ln -s file "$MNT/Documents/to-file"
expect_eq "a symbolic link to a file gives the file's class" "$("$DPFS" protection get "$MNT/Documents/to-file")" untilFirstAuth

# help for a name that is no command fails (it printed the overview and exited 0).
if "$DPFS" help bogus >/dev/null 2>"$WORK/err"; then fail "help for an unknown command" "exited 0"
elif grep -q "'bogus' is not a command" "$WORK/err"; then pass "help for an unknown command: $(head -1 "$WORK/err")"
else fail "help for an unknown command" "stderr was: $(cat "$WORK/err")"; fi
if "$DPFS" help keychain bogus >/dev/null 2>&1; then fail "help for an unknown keychain command" "exited 0"
else pass "help for an unknown keychain command fails"; fi
expect_eq "help for a command shows its overview" "$("$DPFS" help keychain add | head -1 | cut -c1-22)" "OVERVIEW: Add an item;"
check "help alone shows the overview" "$DPFS" help
finish
