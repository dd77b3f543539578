#!/usr/bin/env bash
# Where a new file's class comes from — its directory, else the sandbox
# default from init --default-protection or the entitlements plist, else untilFirstAuth.
source "$(dirname "$0")/lib.sh"

cat > "$WORK/app.entitlements" <<'PLIST'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
    <key>application-identifier</key>
    <string>ABCDE12345.com.example.notes</string>
    <key>keychain-access-groups</key>
    <array><string>ABCDE12345.*</string></array>
    <key>com.apple.developer.default-data-protection</key>
    <string>NSFileProtectionComplete</string>
</dict>
</plist>
PLIST

setup_device --app com.example.notes --entitlements "$WORK/app.entitlements"
unlock_device
echo x > "$MNT/Documents/new.txt"
expect_eq "the entitlements plist sets the default (NSFileProtectionComplete)" "$("$DPFS" protection get "$MNT/Documents/new.txt")" "complete"
expect_eq "status shows the default class" "$("$DPFS" status "$MNT" --json | sed -n 's/.*"defaultProtection":"\([a-zA-Z]*\)".*/\1/p')" "complete"
check "a directory can pass on another class" setfattr -n user.dpfs.protection -v none "$MNT/Library/Caches"
mkdir -p "$MNT/Library/Caches/deep/er"
echo y > "$MNT/Library/Caches/deep/er/f"
expect_eq "new directories and their files inherit it" "$("$DPFS" protection get "$MNT/Library/Caches/deep/er/f")" "none"
"$DPFS" unmount "$MNT"

rm -rf "$DEV"
"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS" --default-protection completeUnlessOpen \
    --entitlements "$WORK/app.entitlements" >/dev/null
mount_device; unlock_device
echo z > "$MNT/tmp/z"
expect_eq "--default-protection wins over the plist" "$("$DPFS" protection get "$MNT/tmp/z")" "completeUnlessOpen"
"$DPFS" unmount "$MNT"

# An Xcode project's entitlements file: Xcode adds application-identifier only when it
# signs. init says how to name the app instead, and leaves nothing it made on the way.
cat > "$WORK/project.entitlements" <<'PLIST'
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0">
<dict>
    <key>com.apple.developer.default-data-protection</key>
    <string>NSFileProtectionComplete</string>
</dict>
</plist>
PLIST
rm -rf "$DEV"
NEWSTORE="$WORK/new/secrets"
check_error "a project's entitlements file is refused with what to give instead" \
    "give the bundle ID with --app and the team as com.apple.developer.team-identifier" \
    "$DPFS" init "$WORK/newparent/device" --passcode-file "$PASS" --secret-store "file:$NEWSTORE" --create \
    --entitlements "$WORK/project.entitlements"
check "the --create secret store is not left behind" test ! -e "$WORK/new"
check "nor the device directory's parent" test ! -e "$WORK/newparent"
rm -rf "$WORK/newparent"
check_error "an unreadable passcode file is refused" "cannot read passcode file" \
    "$DPFS" init "$WORK/newparent/device" --passcode-file "$WORK/none" --secret-store "file:$NEWSTORE" --create
check "after the device directory's parent was made: it is removed" test ! -e "$WORK/newparent"
mkdir -m 700 "$DEV"
check_error "with --app alone, it asks for the team" "give the team as com.apple.developer.team-identifier" \
    "$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$NEWSTORE" --create --app com.example.notes \
    --entitlements "$WORK/project.entitlements"
expect_eq "an empty device directory given stays empty" "$(ls -A "$DEV")" ""
check "the secret store is not left behind" test ! -e "$WORK/new"
sed -i 's|<dict>|<dict>\n    <key>com.apple.developer.team-identifier</key><string>ABCDE12345</string>|' "$WORK/project.entitlements"
check "with --app and the team in the plist, init takes it" "$DPFS" init "$DEV" --passcode-file "$PASS" \
    --secret-store "file:$NEWSTORE" --create --app com.example.notes --entitlements "$WORK/project.entitlements"
rm -rf "$DEV" "$WORK/new"
"$DPFS" init "$DEV" --no-passcode --secret-store "file:$SECRETS" >/dev/null
mount_device
expect_eq "without a passcode the device boots unlocked" "$(state_of)" "unlocked"
echo w > "$MNT/Documents/w"
expect_eq "the default default is untilFirstAuth" "$("$DPFS" protection get "$MNT/Documents/w")" "untilFirstAuth"
finish
