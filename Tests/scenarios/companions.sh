#!/usr/bin/env bash
# SQLite's companion files take their database's class, as Apple's SQLite gives them
# on iOS: a file made as <base>-wal, <base>-shm or <base>-journal beside the regular
# file <base> gets <base>'s class, not its directory's, so the rows a `complete`
# database holds in its write-ahead log are as unreadable after a lock as the database.
# A class given at creation still wins; such a name without its base, or any other
# name, takes the directory's class.
source "$(dirname "$0")/lib.sh"
require_tools sqlite3 python3 strings

# A writer whose connection stays open (as an app's does) past the lock is killed,
# by its pid, if a check failed before it ended.
scenario_cleanup() {
    if [ -n "${WRITER:-}" ]; then kill -KILL "$WRITER" 2>/dev/null; wait "$WRITER" 2>/dev/null; fi
}

setup_device
unlock_device
D="$MNT/Documents"   # untilFirstAuth, the sandbox default

check "a database in WAL mode" sqlite3 "$D/notes.db" 'pragma journal_mode=wal; create table t(x)'
check "made complete" "$DPFS" protection set complete "$D/notes.db"
check_fails "no companion is left once its connection closed" test -e "$D/notes.db-wal"

mkfifo "$WORK/writer.in"
sqlite3 "$D/notes.db" < "$WORK/writer.in" > "$WORK/writer.out" 2>&1 &
WRITER=$!
exec 9> "$WORK/writer.in"
echo "insert into t values('PIN 4711');" >&9
if within 10 grep -q 'PIN 4711' "$D/notes.db-wal"; then pass "the writer's row is in the -wal"
else fail "the writer's row is in the -wal" "$(ls -l "$D"; cat "$WORK/writer.out")"; fi
expect_eq "the -wal takes the database's class" "$("$DPFS" protection get "$D/notes.db-wal")" complete
expect_eq "the -shm too" "$("$DPFS" protection get "$D/notes.db-shm")" complete

check "lock --now" "$DPFS" lock "$MNT" --now
check_error "locked: the -wal does not open" "Operation not permitted" cat "$D/notes.db-wal"
check_error "locked: nor the -shm" "Operation not permitted" cat "$D/notes.db-shm"
check_fails "locked: strings finds no row in the -wal" sh -c "strings '$D/notes.db-wal' 2>/dev/null | grep -q 'PIN 4711'"
check_fails "nor anything in the device directory" grep -rqa 'PIN 4711' "$DEV"

# The writer's next touch of its map of the -shm, at its close, faults: as an app
# whose complete database stays open across a lock crashes on iOS.
exec 9>&-
{ wait "$WRITER"; } 2>/dev/null
status=$?
WRITER=""
expect_eq "the writer's map of the -shm faults after the lock (SIGBUS)" "$status" $((128 + 7))

check "unlock" unlock_device
expect_eq "after the unlock the row is read back from the -wal" "$(sqlite3 "$D/notes.db" 'select x from t')" "PIN 4711"

# completeUnlessOpen, for a database that stays open across a lock: its connection
# keeps its keys, writes on and closes cleanly.
check "another WAL database" sqlite3 "$D/open.db" 'pragma journal_mode=wal; create table t(x)'
check "made completeUnlessOpen" "$DPFS" protection set completeUnlessOpen "$D/open.db"
sqlite3 "$D/open.db" < "$WORK/writer.in" > "$WORK/writer.out" 2>&1 &
WRITER=$!
exec 9> "$WORK/writer.in"
echo "insert into t values('before');" >&9
within 10 grep -q before "$D/open.db-wal"
expect_eq "its -wal is completeUnlessOpen" "$("$DPFS" protection get "$D/open.db-wal")" completeUnlessOpen
check "lock --now" "$DPFS" lock "$MNT" --now
echo "insert into t values('after the lock');" >&9
exec 9>&-
{ wait "$WRITER"; } 2>/dev/null
status=$?
WRITER=""
expect_eq "the connection writes on after the lock and closes cleanly" "$status:$(cat "$WORK/writer.out")" "0:"
check "unlock" unlock_device
expect_eq "both rows are in the database" "$(sqlite3 "$D/open.db" 'select x from t')" "before
after the lock"

echo data > "$D/plain.txt"
check "a plain file made complete" "$DPFS" protection set complete "$D/plain.txt"
check "touch plain.txt-wal" touch "$D/plain.txt-wal"
expect_eq "it is complete" "$("$DPFS" protection get "$D/plain.txt-wal")" complete
check "touch plain.txt-journal" touch "$D/plain.txt-journal"
expect_eq "it is complete" "$("$DPFS" protection get "$D/plain.txt-journal")" complete
check "mknod(2) of a regular plain.txt-shm" python3 -c "import os, stat; os.mknod('$D/plain.txt-shm', stat.S_IFREG | 0o644)"
expect_eq "it is complete" "$("$DPFS" protection get "$D/plain.txt-shm")" complete
check "touch plain.txt-bak" touch "$D/plain.txt-bak"
expect_eq "another suffix takes the directory's class" "$("$DPFS" protection get "$D/plain.txt-bak")" untilFirstAuth
check "touch nobase-wal" touch "$D/nobase-wal"
expect_eq "a companion name without its base takes the directory's class" \
    "$("$DPFS" protection get "$D/nobase-wal")" untilFirstAuth
mkdir "$D/folder"
"$DPFS" protection set complete "$D/folder"
check "touch folder-journal" touch "$D/folder-journal"
expect_eq "a base that is a directory gives nothing" "$("$DPFS" protection get "$D/folder-journal")" untilFirstAuth
check "touch -wal" touch "$D/-wal"
expect_eq "nor does an empty base" "$("$DPFS" protection get "$D/-wal")" untilFirstAuth

# A class given at creation (user.dpfs.create-protection) wins over the base's.
rm "$D/plain.txt-wal"
check "a companion made with a class given at creation" python3 - "$D" <<'PY'
import os, sys
d = sys.argv[1]
os.setxattr(d, "user.dpfs.create-protection", b"none")
try:
    os.close(os.open(os.path.join(d, "plain.txt-wal"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
finally:
    os.removexattr(d, "user.dpfs.create-protection")
PY
expect_eq "it has the class given, not the base's" "$("$DPFS" protection get "$D/plain.txt-wal")" none

# The base's class, also where the directory's is unavailable: a `none` database in a
# complete directory keeps its journal while locked, as on iOS.
mkdir "$D/vault"
"$DPFS" protection set complete "$D/vault"
echo rows > "$D/vault/cache.db"
"$DPFS" protection set none "$D/vault/cache.db"
check "lock --now" "$DPFS" lock "$MNT" --now
check_error "locked: a plain create in the complete directory is EPERM" "Operation not permitted" touch "$D/vault/other"
check "locked: the none database's journal is made" touch "$D/vault/cache.db-journal"
expect_eq "and is none" "$("$DPFS" protection get "$D/vault/cache.db-journal")" none
finish
