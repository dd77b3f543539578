#!/usr/bin/env bash
# A CI job's cancel or timeout ends `dpfs test` and, with it, every test it started.
# SwiftPM starts its test runner (dpfs run) in a process group of its own, which the job's
# SIGKILL to dpfs test's group does not reach; the runs dpfs test starts end with it all
# the same: no dpfs run, no program is left running as the app, and the mount unmounts.
# A stand-in for swift (dpfs test --swift) starts the toolset's runner as SwiftPM does.
# Where bubblewrap is not installed, dpfs run and dpfs test exit 126 with one line that
# names it, and dpfs test starts no swift.
source "$(dirname "$0")/lib.sh"
require_tools bwrap python3 setsid

PYTHON=$(python3 -c 'import sys; print(sys.executable)')
STUB="$WORK/swift"
# `swift test --toolset FILE ARGS`: the toolset's test runner with ARGS as its program,
# in a process group of its own; the runner's pid in $RUNNER_PID_FILE.
cat > "$STUB" <<PY
#!$PYTHON
import json, os, subprocess, sys
args = sys.argv[1:]
if os.environ.get("STUB_RAN"): open(os.environ["STUB_RAN"], "w").close()
assert args[:2] == ["test", "--toolset"], args
runner = json.load(open(args[2]))["testRunner"]
child = subprocess.Popen([runner["path"], *runner["extraCLIOptions"], *args[3:]], process_group=0)
with open(os.environ["RUNNER_PID_FILE"] + ".new", "w") as f: f.write(str(child.pid))
os.rename(os.environ["RUNNER_PID_FILE"] + ".new", os.environ["RUNNER_PID_FILE"])
sys.exit(child.wait())
PY
chmod 755 "$STUB"

test_pid=""; runner=""
MARKER="dpfs-testcancel-$$-$RANDOM"
# Only what this scenario started: the dpfs test's group, its runner, the marked programs.
scenario_cleanup() {
    local pid
    [ -n "$test_pid" ] && kill -KILL -- "-$test_pid" 2>/dev/null
    [ -n "$runner" ] && kill -KILL "$runner" 2>/dev/null
    for pid in $(pgrep -f "$MARKER"); do kill -KILL "$pid" 2>/dev/null; done
    return 0
}
# Whether process $1 is running (a zombie has ended).
running() { [ -r "/proc/$1/stat" ] && ! sed 's/.*) //' "/proc/$1/stat" | grep -q '^Z'; }
programs_gone() { ! pgrep -f "$MARKER" >/dev/null; }
# What is left of the marked programs, each with its parent and state, to name in a failure.
marked_programs() {
    local pids
    pids=$(pgrep -d, -f "$MARKER") && ps -o pid=,ppid=,pgid=,stat=,args= -p "$pids"
}
runner_gone() { ! running "$runner"; }

setup_device

# cancel NAME HOW [dpfs test options]: starts dpfs test as a CI job does (a session and
# process group of its own) with a program that ignores SIGTERM, SIGINT and SIGHUP and
# leaves a process of its own in another session; once it runs, ends the job HOW:
# "kill" (SIGKILL to the group) or "github" (SIGINT, SIGTERM 2 s later, SIGKILL 3 s
# after that, as GitHub Actions cancels a step). The job ends once a process whose
# command line ends in $STARTED runs (the grandchild: every other marked one ends in
# the marker alone); PATH_FIRST goes before PATH.
cancel() {
    local name=$1 how=$2; shift 2
    local program="trap '' TERM INT HUP; setsid sh -c 'trap \"\" TERM INT HUP; while :; do sleep 1; done' $MARKER-grandchild & while :; do sleep 1; done"
    rm -f "$WORK/runner.pid"
    PATH="${PATH_FIRST:+$PATH_FIRST:}$PATH" RUNNER_PID_FILE="$WORK/runner.pid" \
        setsid "$DPFS" test "$MNT" --swift "$STUB" "$@" -- sh -c "$program" "$MARKER" > "$WORK/test.out" 2>&1 &
    test_pid=$!
    if ! within 120 test -s "$WORK/runner.pid" || ! within 120 pgrep -f "${STARTED:-$MARKER-grandchild}\$"; then
        fail "$name: the program did not start" "$(cat "$WORK/test.out")"
        return
    fi
    runner=$(cat "$WORK/runner.pid")
    [ "$(ps -o pgid= -p "$runner" | tr -d ' ')" != "$test_pid" ] || fail "$name: the stand-in's runner is in dpfs test's group"
    if [ "$how" = github ]; then
        kill -INT -- "-$test_pid"; sleep 2; kill -TERM -- "-$test_pid" 2>/dev/null; sleep 3
    fi
    kill -KILL -- "-$test_pid" 2>/dev/null
    wait "$test_pid" 2>/dev/null
    test_pid=""
    check "$name: no dpfs run is left" within 60 runner_gone
    if within 60 programs_gone; then pass "$name: no program is left running as the app"
    else fail "$name: no program is left running as the app" "$(marked_programs)"; fi
    check "$name: the mount unmounts" within 60 "$DPFS" unmount "$MNT"
    # What a failed case left, ended, so that the next case starts from a mount of its own.
    scenario_cleanup; runner=""
    if grep -qs " $MNT fuse" /proc/mounts; then within 60 "$DPFS" unmount "$MNT"; fi
    mount_device
}

cancel "SIGKILL to the job's group" kill
cancel "SIGKILL to the job's group, --no-isolation" kill --no-isolation
cancel "a GitHub-style cancel" github

# A cancel while bwrap makes the sandbox: its child asks for its death signal only
# just before the program starts, so killing bwrap alone would leave it. A stand-in
# bwrap is caught there: a child of its own that outlives it, and no sandbox.
UNBORN="$WORK/unborn"
mkdir "$UNBORN"
cat > "$UNBORN/bwrap" <<SH
#!/bin/sh
while [ \$# -gt 0 ]; do [ "\$1" = --info-fd ] && info=\$2; shift; done
[ -n "\$info" ] && eval "exec \$info>&-"
sh -c 'trap "" TERM INT HUP; while :; do sleep 1; done' $MARKER-unborn &
wait
SH
chmod 755 "$UNBORN/bwrap"
PATH_FIRST="$UNBORN" STARTED="$MARKER-unborn" cancel "SIGKILL while bwrap makes the sandbox" kill

# No bubblewrap: a PATH without bwrap (python3 and sh stay reachable by absolute path).
NOBWRAP="$WORK/nobwrap"
mkdir "$NOBWRAP"
out=$(env PATH="$NOBWRAP" "$DPFS" run "$MNT" -- /bin/true 2>&1); rc=$?
expect_eq "run without bubblewrap exits 126" "$rc" "126"
expect_eq "run without bubblewrap says so in one line" "$(printf '%s\n' "$out" | wc -l)" "1"
case $out in *bubblewrap*--no-isolation*) pass "the line names bubblewrap and --no-isolation" ;;
    *) fail "the line names bubblewrap and --no-isolation" "$out" ;; esac
out=$(env PATH="$NOBWRAP" STUB_RAN="$WORK/stub.ran" RUNNER_PID_FILE="$WORK/runner.pid" \
    "$DPFS" test "$MNT" --swift "$STUB" -- /bin/true 2>&1); rc=$?
expect_eq "test without bubblewrap exits 126" "$rc" "126"
expect_eq "test without bubblewrap says so once" "$(printf '%s\n' "$out" | wc -l)" "1"
check_fails "test without bubblewrap starts no swift" test -e "$WORK/stub.ran"
check "with --no-isolation bubblewrap is not needed" env PATH="$NOBWRAP" "$DPFS" run "$MNT" --no-isolation -- /bin/true

# A kernel before 5.3 (or a container's seccomp profile) has no pidfd_open: the runs
# dpfs test starts go on untied, with a warning, and the program's status comes through.
if command -v cc >/dev/null; then
    cat > "$WORK/nopidfd.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
long syscall(long number, ...) {
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
    va_end(ap);
    if (number == SYS_pidfd_open) { errno = ENOSYS; return -1; }
    long (*real)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
C
    cc -shared -fPIC -o "$WORK/nopidfd.so" "$WORK/nopidfd.c" -ldl || fail "build the pidfd_open stand-in"
    out=$(LD_PRELOAD="$WORK/nopidfd.so" RUNNER_PID_FILE="$WORK/runner.pid" \
        "$DPFS" test "$MNT" --swift "$STUB" --no-isolation -- sh -c 'exit 3' 2>&1); rc=$?
    expect_eq "without pidfd_open the program's status comes through" "$rc" "3"
    case $out in *"warning: cannot watch dpfs test"*"not tied"*) pass "and a warning says the run is not tied" ;;
        *) fail "and a warning says the run is not tied" "$out" ;; esac
else
    log "no C compiler: the kernel without pidfd_open is not checked"
fi

finish
