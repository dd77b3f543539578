#!/usr/bin/env bash
# The apps a device knows: `dpfs app list` after init and after `app add`, as text and
# JSON, the sandbox's own app marked and named by `dpfs status`; an app's own session
# sees itself alone, as an app on iOS knows no other app's identity.
source "$(dirname "$0")/lib.sh"
require_tools bwrap python3
TEAM=ABCDE12345

# plist APP_ID [GROUP...]: an entitlements plist with those keychain access groups.
plist() {
    local app=$1 group
    shift
    printf '<plist version="1.0"><dict>\n<key>application-identifier</key><string>%s</string>\n' "$app"
    printf '<key>keychain-access-groups</key><array>'
    for group in "$@"; do printf '<string>%s</string>' "$group"; done
    printf '</array>\n</dict></plist>\n'
}
plist "$TEAM.com.example.app" "$TEAM.shared" > "$WORK/app.plist"
plist "$TEAM.com.example.widget" "$TEAM.shared" > "$WORK/widget.plist"
plist "OTHER00001.org.other.tool" > "$WORK/tool.plist"
plist "$TEAM.com.example.vault" "$TEAM.com.example.vault" "$TEAM.shared" > "$WORK/vault.plist"
setup_device --app com.example.app --entitlements "$WORK/app.plist"

# json_apps EXPRESSION: EXPRESSION of `apps`, the list `dpfs app list --json` (on stdin) holds.
json_apps() { python3 -c 'import json, sys; apps = json.load(sys.stdin)["apps"]; print(eval(sys.argv[1]))' "$1"; }

# After init: the sandbox's own app alone, before the first unlock (apps are not secret).
out=$("$DPFS" app list "$MNT")
expect_eq "after init one app is listed" "$(printf '%s\n' "$out" | grep -c .)" "1"
expect_eq "it is the sandbox's own, with its team and groups" "$out" \
    "com.example.app  (own)  team $TEAM  groups $TEAM.shared, $TEAM.com.example.app"
json=$("$DPFS" app list "$MNT" --json)
check "the JSON parses" python3 -c 'import json, sys; json.loads(sys.argv[1])' "$json"
expect_eq "its JSON names the app, marked own" \
    "$(printf '%s' "$json" | json_apps '[(a["bundleID"], a["own"]) for a in apps]')" "[('com.example.app', True)]"
expect_eq "with its access groups, team and application identifier" \
    "$(printf '%s' "$json" | json_apps '(apps[0]["accessGroups"], apps[0]["teamID"], apps[0]["applicationIdentifier"])')" \
    "(['$TEAM.shared', '$TEAM.com.example.app'], '$TEAM', '$TEAM.com.example.app')"

# status names the sandbox's app, and keeps every line and field it had.
status_text=$("$DPFS" status "$MNT")
expect_eq "status names the sandbox's app" "$(printf '%s\n' "$status_text" | sed -n 's/^app: //p')" "com.example.app"
expect_eq "its other lines are as they were" \
    "$(printf '%s\n' "$status_text" | sed -n '1p;/^passcode: /p;/^device: /s/ (daemon pid [0-9]*)//p')" \
    "$(printf 'state: beforeFirstUnlock\npasscode: set\ndevice: %s' "$DEV")"
status_json=$("$DPFS" status "$MNT" --json)
expect_eq "status --json names it as app" "$(printf '%s' "$status_json" | json_field app)" "com.example.app"
expect_eq "and keeps its other fields" \
    "$(printf '%s' "$status_json" | python3 -c 'import json, sys; s = json.load(sys.stdin); print(s["state"], s["passcodeSet"], s["pid"] > 0, sorted(s["classes"]))')" \
    "beforeFirstUnlock True True ['complete', 'completeUnlessOpen', 'completeWhenUserInactive', 'none', 'untilFirstAuth']"

# After app add: every app, the sandbox's own first, the others by bundle ID, aligned.
unlock_device
"$DPFS" app add "$MNT" --entitlements "$WORK/widget.plist" >/dev/null || fail "register com.example.widget"
"$DPFS" app add "$MNT" --entitlements "$WORK/tool.plist" >/dev/null || fail "register org.other.tool"
out=$("$DPFS" app list "$MNT")
expect_eq "after app add every app is listed, one a line, the own first" \
    "$(printf '%s\n' "$out" | awk '{ print $1 }' | tr '\n' ' ')" "com.example.app com.example.widget org.other.tool "
expect_eq "only the sandbox's own is marked" "$(printf '%s\n' "$out" | grep -c '(own)')" "1"
expect_eq "the columns line up" \
    "$(printf '%s\n' "$out" | awk '{ print index($0, "team "), index($0, "groups ") }' | sort -u | wc -l)" "1"
expect_eq "another app's line" "$(printf '%s\n' "$out" | sed -n 2p)" \
    "com.example.widget         team $TEAM  groups $TEAM.shared, $TEAM.com.example.widget"
json=$("$DPFS" app list "$MNT" --json)
expect_eq "the JSON lists all three, own marked" \
    "$(printf '%s' "$json" | json_apps '[(a["bundleID"], a["own"]) for a in apps]')" \
    "[('com.example.app', True), ('com.example.widget', False), ('org.other.tool', False)]"
expect_eq "each with its own groups" "$(printf '%s' "$json" | json_apps 'apps[2]["accessGroups"]')" "['OTHER00001.org.other.tool']"
"$DPFS" lock "$MNT" --now
expect_eq "the list is there while locked" "$("$DPFS" app list "$MNT" | grep -c .)" "3"
unlock_device

# An app's own session: itself alone, and no other app's name in status.
as_widget() { "$DPFS" run "$MNT" --app com.example.widget -- "$@"; }
out=$(as_widget "$DPFS" app list "$MNT" 2>&1)
expect_eq "an app's session lists itself alone" "$out" \
    "com.example.widget  team $TEAM  groups $TEAM.shared, $TEAM.com.example.widget"
expect_eq "and its JSON too, not marked own" \
    "$(as_widget "$DPFS" app list "$MNT" --json | json_apps '[(a["bundleID"], a["own"]) for a in apps]')" \
    "[('com.example.widget', False)]"
out=$(as_widget "$DPFS" status "$MNT" --json)
expect_eq "another app's status names no app" "$(printf '%s' "$out" | json_field app)" ""
expect_eq "nor does its text" "$(as_widget "$DPFS" status "$MNT" | grep -c -e '^app: ' -e 'com.example.app')" "0"
expect_eq "the sandbox's own session lists itself, marked own" \
    "$("$DPFS" run "$MNT" -- "$DPFS" app list "$MNT" --json | json_apps '[(a["bundleID"], a["own"]) for a in apps]')" \
    "[('com.example.app', True)]"
expect_eq "and its status names it" "$("$DPFS" run "$MNT" -- "$DPFS" status "$MNT" --json | json_field app)" "com.example.app"

# An app whose keychain-access-groups name its application identifier: listed once,
# in the place the entitlement gives it.
"$DPFS" app add "$MNT" --entitlements "$WORK/vault.plist" >/dev/null || fail "register com.example.vault"
expect_eq "the application identifier in keychain-access-groups is listed once" \
    "$("$DPFS" app list "$MNT" --json | json_apps '[a["accessGroups"] for a in apps if a["bundleID"] == "com.example.vault"]')" \
    "[['$TEAM.com.example.vault', '$TEAM.shared']]"

# Exit statuses as for the other commands.
# exits_with WHAT STATUS COMMAND...: COMMAND exits with STATUS.
exits_with() {
    local what=$1 want=$2 rc
    shift 2
    "$@" >/dev/null 2>&1
    rc=$?
    expect_eq "$what" "$rc" "$want"
}
exits_with "a directory that is no dpfs mount: 15" 15 "$DPFS" app list "$WORK"
exits_with "no mountpoint: usage, 64" 64 "$DPFS" app list
exits_with "an unknown option: usage, 64" 64 "$DPFS" app list "$MNT" --frobnicate
expect_eq "--json on failure prints the error and status as JSON" \
    "$("$DPFS" app list "$WORK" --json 2>/dev/null | json_field exitStatus)" "15"
check_error "the failure is one line naming the path" "is not a dpfs mount" "$DPFS" app list "$WORK"
finish
