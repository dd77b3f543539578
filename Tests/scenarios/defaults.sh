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

rm -rf "$DEV"
"$DPFS" init "$DEV" --no-passcode --secret-store "file:$SECRETS" >/dev/null
mount_device
expect_eq "without a passcode the device boots unlocked" "$(state_of)" "unlocked"
echo w > "$MNT/Documents/w"
expect_eq "the default default is untilFirstAuth" "$("$DPFS" protection get "$MNT/Documents/w")" "untilFirstAuth"
finish
