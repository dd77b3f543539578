#!/usr/bin/env bash
# The runnable keychain examples (Sources/Examples) against a real device, in each
# lock state where iOS answers differently: every SecItem call must get the status
# iOS gives, or the example exits 1. The examples are found beside $DPFS (a
# `swift build` builds them) or in $EXAMPLES.
source "$(dirname "$0")/lib.sh"

EXAMPLES=${EXAMPLES:-$(dirname "$DPFS")}
TEAM=ABCDE12345

plist() {  # plist FILE APP_ID GROUP...
    local file=$1 app=$2; shift 2
    {
        printf '<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0">\n<dict>\n'
        printf '\t<key>application-identifier</key>\n\t<string>%s</string>\n' "$app"
        printf '\t<key>keychain-access-groups</key>\n\t<array>\n'
        for group in "$@"; do printf '\t\t<string>%s</string>\n' "$group"; done
        printf '\t</array>\n</dict>\n</plist>\n'
    } > "$file"
}

# example NAME [ARG...]: runs the example inside `dpfs run` as $APP (unset: the sandbox's
# app); must exit 0.
example() {
    local name=$1; shift
    local out
    if out=$("$DPFS" run "$MNT" ${APP:+--app "$APP"} -- "$EXAMPLES/Example$name" "$@" 2>&1) \
        && printf '%s' "$out" | grep -q "every call answered as on iOS"; then
        pass "$name $* ${APP:+as $APP }answers as iOS"
    else
        fail "$name $* ${APP:+as $APP }answers as iOS" "$(printf '%s' "$out" | grep -v '^ok' | head -5)"
    fi
}

# example_differs NAME STATUS [ARG...]: must exit non-zero and report STATUS.
example_differs() {
    local name=$1 status=$2; shift 2
    local out
    if out=$("$DPFS" run "$MNT" ${APP:+--app "$APP"} -- "$EXAMPLES/Example$name" "$@" 2>&1); then
        fail "$name $* fails with $status" "exited 0"
    elif printf '%s' "$out" | grep -q "FAIL.*$status"; then
        pass "$name $* fails with $status"
    else
        fail "$name $* fails with $status" "$(printf '%s' "$out" | head -5)"
    fi
}

for name in KeychainPassword SharedAccessGroup SynchronizableItem; do
    [ -x "$EXAMPLES/Example$name" ] || { fail "Example$name is built in $EXAMPLES"; finish; }
done

setup_device
check "unlock" unlock_device
plist "$WORK/mail.plist" "$TEAM.com.example.mail" "$TEAM.com.example.mail" "$TEAM.com.example.shared"
plist "$WORK/notes.plist" "$TEAM.com.example.notes" "$TEAM.com.example.notes" "$TEAM.com.example.shared"
plist "$WORK/other.plist" "OTHER12345.com.example.other" "OTHER12345.com.example.other"
for app in mail notes other; do check "register $app" "$DPFS" app add "$MNT" --entitlements "$WORK/$app.plist"; done

# --- unlocked: everything succeeds ----------------------------------------------------
example KeychainPassword
APP=com.example.mail example SharedAccessGroup write
APP=com.example.notes example SharedAccessGroup read
APP=com.example.other example SharedAccessGroup read-outside
example SynchronizableItem

# --- locked: WhenUnlocked items are errSecInteractionNotAllowed ---------------------
check "lock --now" "$DPFS" lock "$MNT" --now
example KeychainPassword --locked
APP=com.example.notes example SharedAccessGroup read --locked
example SynchronizableItem   # AfterFirstUnlock: the same answers while locked
example_differs KeychainPassword errSecInteractionNotAllowed   # expecting unlocked answers fails

# --- before first unlock: AfterFirstUnlock items go too ---------------------------------
check "restart" "$DPFS" restart "$MNT"
example_differs SynchronizableItem errSecInteractionNotAllowed
example KeychainPassword --locked

# --- unlocked again ------------------------------------------------------------------------
check "unlock again" unlock_device
example KeychainPassword
APP=com.example.notes example SharedAccessGroup read
example SynchronizableItem

finish
