#!/usr/bin/env bash
# dpfs run: the sandbox environment, Foundation's directories inside the
# mount, exit status and signals passed through, bad mountpoints and apps refused.
source "$(dirname "$0")/lib.sh"
EXAMPLES=$(dirname "$DPFS")
setup_device
unlock_device

env_of() { "$DPFS" run "$MNT" "$@" -- env; }
out=$(env_of)
value() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
expect_eq "HOME is the mount" "$(value HOME)" "$MNT"
expect_eq "CFFIXED_USER_HOME is the mount" "$(value CFFIXED_USER_HOME)" "$MNT"
expect_eq "TMPDIR is tmp/" "$(value TMPDIR)" "$MNT/tmp"
expect_eq "XDG_CACHE_HOME" "$(value XDG_CACHE_HOME)" "$MNT/Library/Caches"
expect_eq "XDG_DATA_HOME" "$(value XDG_DATA_HOME)" "$MNT/Library/Application Support"
expect_eq "XDG_CONFIG_HOME" "$(value XDG_CONFIG_HOME)" "$MNT/Library/Preferences"
expect_eq "DPFS_MOUNT" "$(value DPFS_MOUNT)" "$MNT"
expect_eq "DPFS_APP is the sandbox's app" "$(value DPFS_APP)" "com.example.app"
out=$(DPFS_PASSCODE=1234 DPFS_MOUNT=/elsewhere "$DPFS" run "$MNT" -- env)
expect_eq "other DPFS_* variables are not passed on" "$(value DPFS_PASSCODE)" ""
expect_eq "DPFS_MOUNT is its own, not the caller's" "$(value DPFS_MOUNT)" "$MNT"
out=$(env -u DPFS "$DPFS" run "$MNT" -- sh -c 'echo "DPFS=$DPFS"; "$DPFS" status "$DPFS_MOUNT" >/dev/null && echo "RAN=yes"')
expect_eq "DPFS names the dpfs that runs the program" "$(value DPFS)" "$(readlink -f "$DPFS")"
expect_eq "and the program can run it" "$(value RAN)" "yes"
out=$(DPFS=/opt/other/dpfs "$DPFS" run "$MNT" -- env)
expect_eq "a DPFS the caller set is kept" "$(value DPFS)" "/opt/other/dpfs"
( cd "$WORK" && "$DPFS" run mnt -- env ) > "$WORK/relative.env"
expect_eq "a relative mountpoint is made absolute" "$(sed -n 's/^HOME=//p' "$WORK/relative.env")" "$MNT"

# Foundation's own directories, from a Swift program.
if [ -x "$EXAMPLES/ExampleSandboxPaths" ]; then
    out=$("$DPFS" run "$MNT" -- "$EXAMPLES/ExampleSandboxPaths")
    expect_eq ".documentDirectory" "$(value documents)" "$MNT/Documents"
    expect_eq ".cachesDirectory" "$(value caches)" "$MNT/Library/Caches"
    expect_eq ".applicationSupportDirectory" "$(value applicationSupport)" "$MNT/Library/Application Support"
    expect_eq "NSTemporaryDirectory()" "$(value temporary)" "$MNT/tmp/"
    expect_eq "NSHomeDirectory()" "$(value home)" "$MNT"
else
    fail "ExampleSandboxPaths is built beside dpfs" "not found in $EXAMPLES (swift build builds it)"
fi

# Exit status.
"$DPFS" run "$MNT" -- sh -c 'exit 3'
expect_eq "exit 3 passes through" "$?" "3"
"$DPFS" run "$MNT" -- true
expect_eq "exit 0 passes through" "$?" "0"
"$DPFS" run "$MNT" -- sh -c 'kill -KILL $$'
expect_eq "death by SIGKILL is 128+9" "$?" "137"
"$DPFS" run "$MNT" -- "$WORK/no-such-program" 2>"$WORK/err"
expect_eq "a missing program is 127" "$?" "127"
check "a missing program is named" grep -q "cannot run $WORK/no-such-program" "$WORK/err"
# Arguments reach the program as bytes: a name need not be UTF-8.
raw_args() { "$DPFS" run "$MNT" "$@" -- printf '%s|' $'caf\xe9' $'\xff' 'plain' | od -An -tx1 | tr -d ' \n'; }
expect_eq "non-UTF-8 arguments pass unchanged" "$(raw_args)" "636166e97cff7c706c61696e7c"
expect_eq "and without isolation" "$(raw_args --no-isolation)" "636166e97cff7c706c61696e7c"
check "the program sees the mount's files" "$DPFS" run "$MNT" -- sh -c 'echo hi > "$HOME/Documents/from-run.txt" && test -f "$TMPDIR/../Documents/from-run.txt"'

# Signals sent to dpfs run reach the program. A script's background job starts with
# SIGINT and SIGQUIT ignored, and dpfs run passes an ignored signal on as ignored (as
# the program run directly would have it): start it with them at their defaults.
with_default_signals() {
    exec python3 -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGQUIT): signal.signal(s, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
for sig in TERM HUP INT QUIT; do
    rm -f "$WORK/ready" "$WORK/got"
    with_default_signals "$DPFS" run "$MNT" -- sh -c "trap 'echo $sig > \"$WORK/got\"; exit 7' $sig; touch \"$WORK/ready\"; while :; do sleep 0.1; done" &
    runner=$!
    for _ in $(seq 600); do [ -e "$WORK/ready" ] && break; sleep 0.05; done
    kill -s "$sig" "$runner"
    wait "$runner"
    expect_eq "SIG$sig reaches the program, whose exit status comes back" "$?" "7"
    expect_eq "the program's SIG$sig trap ran" "$(cat "$WORK/got" 2>/dev/null)" "$sig"
done
rm -f "$WORK/ready"
"$DPFS" run "$MNT" -- sh -c "touch \"$WORK/ready\"; exec sleep 30" &
runner=$!
for _ in $(seq 600); do [ -e "$WORK/ready" ] && break; sleep 0.05; done
sleep 0.2
kill -TERM "$runner"
wait "$runner"
expect_eq "a program without a trap dies of the forwarded SIGTERM (128+15)" "$?" "143"
ignored=$(nohup "$DPFS" run "$MNT" -- sh -c 'grep SigIgn /proc/self/status' 2>/dev/null | awk '{print $2}')
expect_eq "under nohup the program keeps SIGHUP ignored" "$(( 0x$ignored & 1 ))" "1"

# Apps.
check_error "an unknown --app is refused" "no app com.example.nope is registered" \
    "$DPFS" run "$MNT" --app com.example.nope -- true
cat > "$WORK/mail.plist" <<'PLIST'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>application-identifier</key>
	<string>ABCDE12345.com.example.mail</string>
	<key>keychain-access-groups</key>
	<array>
		<string>ABCDE12345.com.example.mail</string>
	</array>
</dict>
</plist>
PLIST
"$DPFS" app add "$MNT" --entitlements "$WORK/mail.plist" >/dev/null
out=$("$DPFS" run "$MNT" --app com.example.mail -- env)
expect_eq "a registered --app becomes DPFS_APP" "$(value DPFS_APP)" "com.example.mail"

# Not a sandbox.
check_error "a plain directory is refused" "is not a dpfs mount owned by you" "$DPFS" run "$WORK" -- true
check_error "a path inside the mount is not its root" "is not a dpfs mount owned by you" "$DPFS" run "$MNT/Documents" -- true
check_error "no program is a usage error" "give the program to run" "$DPFS" run "$MNT"
finish
