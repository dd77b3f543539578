#!/usr/bin/env bash
# The class of another app's container: as on iOS, where each app or extension's own
# com.apple.developer.default-data-protection entitlement sets the default of the files
# in its container, a container made by `dpfs run --app X` takes X's class, or
# untilFirstAuth when X has none, whatever the sandbox's own app's default is. A
# container that exists keeps its classes, also when X is registered again.
source "$(dirname "$0")/lib.sh"
require_tools bwrap python3
TEAM=ABCDE12345

# plist BUNDLE_ID [CLASS]: an entitlements plist, with that default class if given.
plist() {
    printf '<plist version="1.0"><dict>\n<key>application-identifier</key><string>%s</string>\n' "$TEAM.$1"
    [ -n "${2:-}" ] && printf '<key>com.apple.developer.default-data-protection</key><string>%s</string>\n' "$2"
    printf '</dict></plist>\n'
}
plist com.example.notes2 NSFileProtectionComplete > "$WORK/notes2.plist"
plist com.example.notes2 > "$WORK/notes2-plain.plist"
plist com.example.widget > "$WORK/widget.plist"
plist com.example.app NSFileProtectionComplete > "$WORK/app-complete.plist"

# class_of PATH: its class as `dpfs protection get` prints it.
class_of() { "$DPFS" protection get "$1" 2>&1; }
# containers: what .containers holds, one space after each name.
containers() { ls -A "$MNT/.containers" | LC_ALL=C sort | tr '\n' ' '; }

# A device whose own app has no entitlement (default untilFirstAuth), and an app whose
# entitlement names complete.
setup_device
unlock_device
"$DPFS" app add "$MNT" --entitlements "$WORK/notes2.plist" >/dev/null || fail "register com.example.notes2"
notes2() { "$DPFS" run "$MNT" --app com.example.notes2 -- "$@"; }
NOTES2="$MNT/.containers/com.example.notes2"
check "com.example.notes2 writes in its container" notes2 sh -c 'echo secret > "$HOME/Documents/f"'
expect_eq "its container takes the class of its entitlement" "$(class_of "$NOTES2")" "complete"
expect_eq "as do the directories in it" \
    "$(for d in Documents "Library/Caches" "Library/Application Support" Library/Preferences tmp; do class_of "$NOTES2/$d"; done | sort -u)" \
    "complete"
expect_eq "and the files it makes" "$(class_of "$NOTES2/Documents/f")" "complete"
expect_eq "the sandbox's own files keep the device default" \
    "$(echo own > "$MNT/Documents/own"; class_of "$MNT/Documents/own")" "untilFirstAuth"
expect_eq "nothing else is left in .containers" "$(containers)" "com.example.notes2 "
"$DPFS" lock "$MNT" --now
check_error "after lock --now the app cannot read its file" "Operation not permitted" notes2 sh -c 'cat "$HOME/Documents/f"'
expect_eq "nor does any of it show" "$(notes2 sh -c 'cat "$HOME/Documents/f"' 2>/dev/null)" ""
unlock_device
expect_eq "after unlock it reads again" "$(notes2 sh -c 'cat "$HOME/Documents/f"')" "secret"

# Registered again with another default: the container it has keeps its classes (the
# user may have changed them); a container made anew takes the new default.
"$DPFS" protection set completeUnlessOpen "$NOTES2/tmp" || fail "change the class of its tmp"
rmdir "$NOTES2/Library/Preferences" || fail "remove its Library/Preferences"
"$DPFS" app add "$MNT" --entitlements "$WORK/notes2-plain.plist" >/dev/null || fail "register com.example.notes2 again"
expect_eq "the listing shows the new entitlement" \
    "$("$DPFS" app list "$MNT" --json | python3 -c 'import json, sys; print([a.get("defaultDataProtection") for a in json.load(sys.stdin)["apps"] if a["bundleID"] == "com.example.notes2"])')" \
    "[None]"
check "it runs again" notes2 true
expect_eq "its existing container keeps its classes" \
    "$(class_of "$NOTES2"; class_of "$NOTES2/Documents"; class_of "$NOTES2/tmp")" \
    "$(printf 'complete\ncomplete\ncompleteUnlessOpen')"
expect_eq "a directory it lacked comes back, of the container's class" "$(class_of "$NOTES2/Library/Preferences")" "complete"
expect_eq "its file is still there" "$(notes2 sh -c 'cat "$HOME/Documents/f"')" "secret"
rm -rf "$NOTES2" || fail "remove its container"
check "with its container removed it runs" notes2 true
expect_eq "and its new container takes the new default, untilFirstAuth" "$(class_of "$NOTES2/Documents")" "untilFirstAuth"

# A staging tree (.making-UUID) a run killed before its rename left behind goes with
# the next container made; one whose maker is still at work, holding its shared flock
# on .containers (fd 9 of this shell here), stays. Nothing else removes either.
for app in one two three; do
    plist "com.example.$app" > "$WORK/$app.plist"
    "$DPFS" app add "$MNT" --entitlements "$WORK/$app.plist" >/dev/null || fail "register com.example.$app"
done
scenario_cleanup() { exec 9<&-; }
mkdir -p "$MNT/.containers/.making-left/Documents" "$MNT/.containers/.making-left/Library/Caches"
check "a new app runs" "$DPFS" run "$MNT" --app com.example.one -- true
check_fails "and the staging tree a killed run left is gone" test -e "$MNT/.containers/.making-left"
exec 9< "$MNT/.containers"
flock -s 9 || fail "take a maker's shared lock on .containers"
mkdir -p "$MNT/.containers/.making-live/Documents"
check "a new app runs beside a maker at work" "$DPFS" run "$MNT" --app com.example.two -- true 9<&-
check "whose staging tree stays" test -d "$MNT/.containers/.making-live/Documents"
exec 9<&-
check "once that maker is gone, another new app runs" "$DPFS" run "$MNT" --app com.example.three -- true
check_fails "and the tree it left goes" test -e "$MNT/.containers/.making-live"
expect_eq "leaving the containers only" "$(containers)" \
    "$(printf '%s\n' com.example.notes2 com.example.one com.example.two com.example.three | LC_ALL=C sort | tr '\n' ' ')"
"$DPFS" unmount "$MNT"

# A device whose own app's entitlement names complete, and a widget without one.
rm -rf "$DEV"
setup_device --app com.example.app --entitlements "$WORK/app-complete.plist"
unlock_device
"$DPFS" app add "$MNT" --entitlements "$WORK/widget.plist" >/dev/null || fail "register com.example.widget"
widget() { "$DPFS" run "$MNT" --app com.example.widget -- "$@"; }
WIDGET="$MNT/.containers/com.example.widget"
expect_eq "the sandbox's own files are complete" "$(echo own > "$MNT/Documents/own"; class_of "$MNT/Documents/own")" "complete"

# Locked, its container cannot leave complete for untilFirstAuth (a class change needs
# the current class's key): one clear error, and nothing made.
"$DPFS" lock "$MNT" --now
out=$(widget true 2>&1)
expect_eq "while locked its container is refused with status 14, the device is locked" "$?" "14"
expect_eq "in one line that says to unlock" \
    "$(printf '%s\n' "$out" | wc -l) $(printf '%s' "$out" | grep -c 'cannot make the container of com.example.widget.*unlock the device')" "1 1"
unlock_device
expect_eq "and nothing is left in .containers" "$(containers)" ""

check "the widget writes in its container" widget sh -c 'echo data > "$HOME/Documents/w"'
expect_eq "its container is untilFirstAuth, not the device's complete" "$(class_of "$WIDGET")" "untilFirstAuth"
expect_eq "and so is its file" "$(class_of "$WIDGET/Documents/w")" "untilFirstAuth"
"$DPFS" lock "$MNT" --now
expect_eq "after lock --now it still reads its file, as class C allows" "$(widget sh -c 'cat "$HOME/Documents/w"')" "data"
check_error "while the sandbox's own complete file is not readable" "Operation not permitted" cat "$MNT/Documents/own"
finish
