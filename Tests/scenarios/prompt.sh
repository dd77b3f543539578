#!/usr/bin/env bash
# A passcode typed at a prompt (echo off) is asked for twice when it is being set, so a
# typo does not become a passcode nobody knows: init and passcode change on a terminal.
source "$(dirname "$0")/lib.sh"

# on_terminal "ANSWER1|ANSWER2|..." command...: runs the command on a pseudo-terminal,
# answering each prompt (a line ending in ": ") with the next answer; prints what the
# terminal showed and exits with the command's status.
cat > "$WORK/terminal.py" <<'PY'
import os, pty, select, sys, time
answers = sys.argv[1].split("|")
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
shown = b""
answered = 0
deadline = time.time() + 60
while time.time() < deadline:
    if not select.select([fd], [], [], 1)[0]:
        continue
    try:
        chunk = os.read(fd, 1024)
    except OSError:
        break
    if not chunk:
        break
    shown += chunk
    # Only a prompt shown since the last answer: the newline a command prints after
    # reading one leaves the old prompt at the end of what was shown.
    if answers and shown[answered:].rstrip().endswith(b":"):
        shown += b"\n"
        answered = len(shown)
        os.write(fd, (answers.pop(0) + "\n").encode())
# A command still waiting at the deadline (a prompt that lost its answer) is ended.
done, status = os.waitpid(pid, os.WNOHANG)
if done == 0:
    os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
sys.stdout.write(shown.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
PY
on_terminal() { local answers=$1; shift; python3 "$WORK/terminal.py" "$answers" "$@"; }

out=$(on_terminal "1234|1243" "$DPFS" init "$DEV" --secret-store "file:$SECRETS" 2>&1)
rc=$?
[ $rc -ne 0 ] && pass "init refuses two passcodes that differ" || fail "init refuses two passcodes that differ" "$out"
case "$out" in *"New passcode:"*"Again:"*"the two passcodes differ"*) pass "it asked twice and said why" ;;
               *) fail "it asked twice and said why" "$out" ;; esac
check_fails "and made no device" test -e "$DEV/keybag.json"

out=$(on_terminal "1234|1234" "$DPFS" init "$DEV" --secret-store "file:$SECRETS" 2>&1) \
    && pass "the same passcode twice makes the device" || fail "the same passcode twice makes the device" "$out"
mount_device
check "which the passcode unlocks" unlock_device
out=$(on_terminal "1234|5678|5679" "$DPFS" passcode change "$MNT" 2>&1)
case "$?:$out" in 0:*) fail "passcode change refuses two new passcodes that differ" "$out" ;;
    *"Current passcode:"*"New passcode:"*"Again:"*"the two passcodes differ"*)
        pass "passcode change refuses two new passcodes that differ" ;;
    *) fail "passcode change refuses two new passcodes that differ" "$out" ;; esac
check "the old passcode still unlocks" sh -c '"$0" lock "$1" --now && "$0" unlock "$1" --passcode-file "$2"' "$DPFS" "$MNT" "$PASS"
out=$(on_terminal "1234|5678|5678" "$DPFS" passcode change "$MNT" 2>&1) \
    && pass "the same new passcode twice changes it" || fail "the same new passcode twice changes it" "$out"
printf '5678\n' > "$WORK/new"; chmod 600 "$WORK/new"
check "the new passcode unlocks" sh -c '"$0" lock "$1" --now && "$0" unlock "$1" --passcode-file "$2"' "$DPFS" "$MNT" "$WORK/new"
check "a passcode file is read once, as before" "$DPFS" passcode change "$MNT" --passcode-file "$WORK/new" --new-passcode-file "$PASS"

finish
