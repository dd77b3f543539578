#!/usr/bin/env bash
# The examples of Sources/Examples run inside `dpfs run`, in every lock state where their
# behaviour differs, give what iOS would give.
source "$(dirname "$0")/lib.sh"
EXAMPLES=$(dirname "$DPFS")
for example in ExampleFileProtection ExampleProtectedDataObserver ExampleInactiveExpiry; do
    [ -x "$EXAMPLES/$example" ] || { fail "$example is built beside dpfs" "not in $EXAMPLES"; finish; }
done
setup_device
unlock_device
app() { "$DPFS" run "$MNT" -- "$EXAMPLES/$@"; }

check "write a complete diary and untilFirstAuth notes" app ExampleFileProtection write
expect_eq "diary's class" "$("$DPFS" protection get "$MNT/Documents/diary.txt")" "complete"
expect_eq "notes' class" "$("$DPFS" protection get "$MNT/Documents/notes.txt")" "untilFirstAuth"
out=$(app ExampleFileProtection read)
check "unlocked: the diary reads" grep -q "^diary.txt: readable: Dear diary" <<<"$out"
check "unlocked: the notes read" grep -q "^notes.txt: readable:" <<<"$out"
check "unlocked: protected data available" grep -q "^protected data available: true" <<<"$out"

"$DPFS" lock "$MNT" --now
out=$(app ExampleFileProtection read)
check "locked: the diary is EPERM" grep -q "^diary.txt: unavailable (EPERM)" <<<"$out"
check "locked: the notes still read" grep -q "^notes.txt: readable:" <<<"$out"
check "locked: protected data unavailable" grep -q "^protected data available: false" <<<"$out"

unlock_device
"$DPFS" restart "$MNT"
out=$(app ExampleFileProtection read)
check "after restart: the diary is EPERM" grep -q "^diary.txt: unavailable (EPERM)" <<<"$out"
check "after restart: the notes are EPERM too" grep -q "^notes.txt: unavailable (EPERM)" <<<"$out"
check_fails "after restart: a complete file cannot be written" app ExampleFileProtection write
# What iOS allows an app woken before the first unlock: none files, the class given at
# creation, in Documents (untilFirstAuth).
check "before first unlock: none files are written (class given at creation)" app ExampleFileProtection launch
expect_eq "write(options: .noFileProtection) made a none file" "$("$DPFS" protection get "$MNT/Documents/launch-state.txt")" "none"
expect_eq "createFile(attributes: [.protectionKey: .none]) made a none file" "$("$DPFS" protection get "$MNT/Documents/launch-marker.txt")" "none"
check "no temporary file is left beside them" sh -c "! ls -a '$MNT/Documents' | grep -q dpfs-"

# A feed that expires when the user is inactive (completeWhenUserInactive).
unlock_device
check "write a completeWhenUserInactive feed" app ExampleInactiveExpiry write
expect_eq "feed's class" "$("$DPFS" protection get "$MNT/Library/Caches/feed.json")" "completeWhenUserInactive"
"$DPFS" lock "$MNT" --now
check "locked: the feed reads" grep -q "^feed.json: readable:" <<<"$(app ExampleInactiveExpiry read)"
"$DPFS" clock advance "$MNT" 23h >/dev/null
check "locked 23 h: it still reads" grep -q "^feed.json: readable:" <<<"$(app ExampleInactiveExpiry read)"
"$DPFS" clock advance "$MNT" 1h >/dev/null
check "locked 24 h (the user-inactive period): EPERM" grep -q "^feed.json: unavailable (EPERM)" <<<"$(app ExampleInactiveExpiry read)"
unlock_device
check "unlocked again: it reads" grep -q "^feed.json: readable:" <<<"$(app ExampleInactiveExpiry read)"

# The observer drops its secrets when `dpfs lock` is issued and reloads at unlock.
unlock_device
app ExampleProtectedDataObserver 30 > "$WORK/observer.log" 2>&1 &
observer=$!
wait_for_line() {
    for _ in $(seq 200); do grep -q "$1" "$WORK/observer.log" && return 0; sleep 0.05; done
    return 1
}
check "observer is subscribed" wait_for_line "^observing"
check "observer loaded the diary" grep -q "loaded secrets: true; protected data available: true" "$WORK/observer.log"
"$DPFS" lock "$MNT"
check "dpfs lock: the observer dropped its secrets" wait_for_line "dropped in-memory secrets (loaded: false)"
unlock_device
check "dpfs unlock: the observer reloaded them" wait_for_line "reloaded secrets: true"
wait "$observer"
expect_eq "observer ended after the reload" "$?" "0"
finish
