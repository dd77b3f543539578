#!/usr/bin/env bash
# The keychain through the binary (issue 4): add/find/update/delete with
# Apple's statuses, accessibility across lock and restart, synchronizable, two apps
# sharing an access group, binary data, secrets and attributes absent from the database files, a
# kill -9 of the daemon, and WhenPasscodeSet items dying with the passcode.
source "$(dirname "$0")/lib.sh"

kc() { "$DPFS" keychain "$@"; }

# status_of CMD...: the OSStatus a keychain call reports with --json (0 on success).
status_of() { "$@" --json 2>/dev/null | sed -n 's/.*"status":\(-\{0,1\}[0-9]*\).*/\1/p'; }

setup_device
check "unlock" unlock_device

# --- add, find, duplicates, not found -------------------------------------------------
check "add a generic password" kc add "$MNT" --service mail --account alice --data-file <(printf %s hunter2)
expect_eq "find returns its data" "$(kc find "$MNT" --service mail --account alice)" "hunter2"
check_error "adding it again is a duplicate" "errSecDuplicateItem (-25299)" \
    kc add "$MNT" --service mail --account alice --data-file <(printf %s other)
check_error "accessibility is not part of the identity" "errSecDuplicateItem (-25299)" \
    kc add "$MNT" --service mail --account alice --accessible Always --data-file <(printf %s other)
check_error "find without a match" "errSecItemNotFound (-25300)" kc find "$MNT" --service nothing
kc find "$MNT" --service nothing >/dev/null 2>&1
expect_eq "a failed call exits 1" "$?" "1"
json=$(kc find "$MNT" --service nothing --json 2>/dev/null)
case "$json" in *'"status":-25300'*) pass "--json reports the status on failure" ;; *) fail "--json reports the status on failure" "$json" ;; esac
expect_eq "--json on success" "$(status_of kc find "$MNT" --service mail)" "0"
expect_eq "--json where no daemon answers: errSecNotAvailable" "$(status_of kc find "$WORK" --service mail)" "-25291"
printf secret > "$WORK/open-data"; chmod 644 "$WORK/open-data"
expect_eq "--json for input the call refuses itself: errSecParam" \
    "$(status_of kc add "$MNT" --service open --data-file "$WORK/open-data")" "-50"

# --- limit and return ---------------------------------------------------------------
kc add "$MNT" --service web --account a --data-file <(printf %s A) && kc add "$MNT" --service web --account b --data-file <(printf %s B)
expect_eq "default limit is one" "$(kc find "$MNT" --service web --return attributes | grep -c '^account:')" "1"
expect_eq "--limit all returns every match" "$(kc find "$MNT" --service web --limit all --return attributes | grep -c '^account:')" "2"
expect_eq "--limit all data, one per line" "$(kc find "$MNT" --service web --limit all)" "A
B"
attributes=$(kc find "$MNT" --service mail --return attributes)
for line in "service: mail" "account: alice" "class: genp" "accessible: WhenUnlocked" "synchronizable: no" \
            "accessGroup: XXXXXXXXXX.com.example.app"; do
    case "$attributes" in *"$line"*) pass "attributes show $line" ;; *) fail "attributes show $line" "$attributes" ;; esac
done
created=$(printf '%s\n' "$attributes" | sed -n 's/^creationDate: //p')
[ -n "$created" ] && pass "creation date is returned" || fail "creation date is returned" "$attributes"
both=$(kc find "$MNT" --service mail --return both)
case "$both" in *"data: hunter2"*"service: mail"*|*"service: mail"*"data: hunter2"*) pass "--return both" ;; *) fail "--return both" "$both" ;; esac

# --- update and delete ----------------------------------------------------------------
sleep 0.01
check "update the data of every match" kc update "$MNT" --service web --new-data-file <(printf %s changed)
expect_eq "every match has the new data" "$(kc find "$MNT" --service web --limit all)" "changed
changed"
check "update an attribute" kc update "$MNT" --service mail --account alice --new-account alice2 --new-label Mail
expect_eq "found under the new account" "$(kc find "$MNT" --service mail --account alice2)" "hunter2"
after=$(kc find "$MNT" --service mail --return attributes)
expect_eq "creation date kept" "$(printf '%s\n' "$after" | sed -n 's/^creationDate: //p')" "$created"
[ "$(printf '%s\n' "$after" | sed -n 's/^modificationDate: //p')" \> "$created" ] \
    && pass "modification date moves" || fail "modification date moves" "$after"
check_error "update refuses --return" "errSecParam (-50)" kc update "$MNT" --service mail --new-data-file <(printf %s x) --return data
check_error "update of nothing" "errSecItemNotFound (-25300)" kc update "$MNT" --service nothing --new-data-file <(printf %s x)
check "delete every match" kc delete "$MNT" --service web
check_error "deleted items are gone" "errSecItemNotFound (-25300)" kc find "$MNT" --service web

# --- descriptive attributes (kSecAttrComment…) ----------------------------------------
check "add with a comment and a generic" kc add "$MNT" --service notes --account a --comment "first one" \
    --generic 00ff --is-invisible yes --data-file <(printf %s note-a)
kc add "$MNT" --service notes --account b --comment "second one" --data-file <(printf %s note-b)
expect_eq "a find by comment picks its item" "$(kc find "$MNT" --service notes --comment "second one")" "note-b"
described=$(kc find "$MNT" --service notes --account a --return attributes)
for line in "comment: first one" "generic: 00ff" "isInvisible: yes"; do
    case "$described" in *"$line"*) pass "attributes show $line" ;; *) fail "attributes show $line" "$described" ;; esac
done
check "update a comment" kc update "$MNT" --service notes --comment "first one" --new-comment renamed
expect_eq "found by the new comment" "$(kc find "$MNT" --service notes --comment renamed)" "note-a"
check_error "a generic that is not hex" "generic must be bytes in hex" kc find "$MNT" --service notes --generic xyz
check_error "a comment on a key item" "comment is not an attribute of keys items" kc find "$MNT" --class keys --comment x

# --- a query's access control narrows it, never ignored --------------------------------
kc add "$MNT" --service gated --account plain --data-file <(printf %s plain)
kc add "$MNT" --service gated --account present --access-control userPresence --data-file <(printf %s present)
check_error "a delete by an access control no item has" "errSecItemNotFound (-25300)" \
    kc delete "$MNT" --access-control biometryCurrentSet
expect_eq "and every item is still there" \
    "$(kc find "$MNT" --service gated --limit all --return attributes | grep -c '^account:')" "2"
expect_eq "a find by access control sees only its items" \
    "$(kc find "$MNT" --service gated --access-control userPresence --limit all --return attributes | grep '^account:')" \
    "account: present"
check "an update puts an access control on an item" \
    kc update "$MNT" --service gated --account plain --new-access-control devicePasscode
expect_eq "which a find by it then sees" \
    "$(kc find "$MNT" --service gated --access-control devicePasscode --return attributes | grep '^account:')" \
    "account: plain"
check_error "a flag Apple does not have is refused" "accessControl must be flags" \
    kc update "$MNT" --service gated --account plain --new-access-control faceOnly
check "a delete by access control" kc delete "$MNT" --service gated --access-control userPresence
expect_eq "deletes only its items" "$(kc find "$MNT" --service gated --limit all --return attributes | grep '^account:')" \
    "account: plain"

# --- internet passwords ---------------------------------------------------------------
check "add an internet password" kc add "$MNT" --class inet --server example.com --protocol htps --port 443 \
    --path /login --account alice --data-file <(printf %s web-pw)
check "another port is another item" kc add "$MNT" --class inet --server example.com --protocol htps --port 8443 \
    --path /login --account alice --data-file <(printf %s other-port)
check_error "same inet identity is a duplicate" "errSecDuplicateItem (-25299)" \
    kc add "$MNT" --class inet --server example.com --protocol htps --port 443 --path /login --account alice --data-file <(printf %s x)
expect_eq "inet find" "$(kc find "$MNT" --class inet --server example.com --port 443)" "web-pw"

# --- data sources ---------------------------------------------------------------------
head -c 4096 /dev/urandom > "$WORK/blob"
printf '\0\0\377\n\r' >> "$WORK/blob"
chmod 600 "$WORK/blob"
check "add binary data from a file" kc add "$MNT" --service blob --data-file "$WORK/blob"
kc find "$MNT" --service blob > "$WORK/blob.out"
check "binary data comes back byte-exact" cmp "$WORK/blob" "$WORK/blob.out"
chmod 600 "$WORK/blob.out"
check "update binary data from a file" kc update "$MNT" --service blob --new-data-file "$WORK/blob.out"
check "add from stdin" sh -c "printf 'piped secret' | '$DPFS' keychain add '$MNT' --service piped"
expect_eq "stdin data" "$(kc find "$MNT" --service piped)" "piped secret"
printf 'line one\nline\0two\n' > "$WORK/nul.expected"
check "add from stdin with --data-file -" \
    sh -c "printf 'line one\\nline\\0two\\n' | '$DPFS' keychain add '$MNT' --service stdin-nul --data-file -"
kc find "$MNT" --service stdin-nul > "$WORK/nul.out"
check "stdin data with a newline and a NUL comes back byte-exact" cmp "$WORK/nul.expected" "$WORK/nul.out"
check "update from stdin with --new-data-file -" \
    sh -c "printf 'new\\0data' | '$DPFS' keychain update '$MNT' --service stdin-nul --new-data-file -"
expect_eq "updated data from stdin" "$(kc find "$MNT" --service stdin-nul | od -An -c | tr -s ' ')" " n e w \\0 d a t a"
head -c 65536 /dev/zero | tr '\0' x > "$WORK/max"; chmod 600 "$WORK/max"
check "64 KiB of data is accepted" kc add "$MNT" --service max --data-file "$WORK/max"
printf y >> "$WORK/max"
check_error "more than 64 KiB is refused" "longer than 65536 bytes" kc add "$MNT" --service max2 --data-file "$WORK/max"

# Issue 12, attack 6: item data on the command line would be in /proc/PID/cmdline
# for every user to read; --data and --new-data are refused and nothing is stored.
check_error "--data is refused" \
    "--data would put the secret in the process list; use --data-file F or --data-file - for stdin" \
    kc add "$MNT" --service argv --data leaked-secret
check_error "nothing was added" "errSecItemNotFound (-25300)" kc find "$MNT" --service argv
check_error "--new-data is refused" \
    "--new-data would put the secret in the process list; use --new-data-file F or --new-data-file - for stdin" \
    kc update "$MNT" --service piped --new-data leaked-secret
expect_eq "nothing was changed" "$(kc find "$MNT" --service piped)" "piped secret"
# Issue 12, attack 7 for data files: group or other access refuses the file.
for mode in 0644 0640 0604; do
    printf 'readable' > "$WORK/data-$mode"; chmod "$mode" "$WORK/data-$mode"
    check_error "a data file with mode $mode is refused" \
        "data file $WORK/data-$mode has mode $mode; it must not be accessible by group or others (chmod 600 $WORK/data-$mode)" \
        kc add "$MNT" --service "mode-$mode" --data-file "$WORK/data-$mode"
    check_error "and nothing is added ($mode)" "errSecItemNotFound (-25300)" kc find "$MNT" --service "mode-$mode"
done
printf 'owner only' > "$WORK/data-0400"; chmod 0400 "$WORK/data-0400"
check "a data file with mode 0400 is accepted" kc add "$MNT" --service mode-0400 --data-file "$WORK/data-0400"
expect_eq "its data" "$(kc find "$MNT" --service mode-0400)" "owner only"

# --- secrets at rest ------------------------------------------------------------------
marker="MARKER-$$-plaintext"
kc add "$MNT" --service marker --data-file <(printf %s "$marker")
if cat "$DEV"/keychain.sqlite* | grep -qa "$marker"; then fail "no secret in plaintext in the database or WAL"
else pass "no secret in plaintext in the database or WAL"; fi
# Attributes are keyed hashes and a sealed set (dpfs(5), "Keychain database").
kc add "$MNT" --service "svc-$$-attr" --account "acct-$$-attr" --label "label-$$-attr" --data-file <(printf x)
expect_eq "the item's attributes come back" \
    "$(kc find "$MNT" --service "svc-$$-attr" --return attributes | grep -c "attr$")" "3"
if cat "$DEV"/keychain.sqlite* | grep -qa -e "svc-$$-attr" -e "acct-$$-attr" -e "label-$$-attr"; then
    fail "no attribute in clear in the database or WAL"
else pass "no attribute in clear in the database or WAL"; fi

# --- synchronizable -------------------------------------------------------------------
check "add a synchronizable item" kc add "$MNT" --service sync --synchronizable yes --data-file <(printf %s cloud)
check_error "queries not naming it see only local items" "errSecItemNotFound (-25300)" kc find "$MNT" --service sync
check "add the local twin" kc add "$MNT" --service sync --data-file <(printf %s local)
expect_eq "--synchronizable any sees both" \
    "$(kc find "$MNT" --service sync --synchronizable any --limit all --return attributes | grep -c '^synchronizable:')" "2"
check_error "synchronizable ThisDeviceOnly is refused" "errSecParam (-50)" \
    kc add "$MNT" --service sync2 --synchronizable yes --accessible AfterFirstUnlockThisDeviceOnly --data-file <(printf %s x)

# --- accessibility across lock and restart --------------------------------------------
kc add "$MNT" --service wu --accessible WhenUnlocked --data-file <(printf %s wu-secret)
kc add "$MNT" --service afu --accessible AfterFirstUnlock --data-file <(printf %s afu-secret)
kc add "$MNT" --service always --accessible AlwaysThisDeviceOnly --data-file <(printf %s always-secret)
check "lock --now" "$DPFS" lock "$MNT" --now
check_error "WhenUnlocked is unavailable when locked" "errSecInteractionNotAllowed (-25308)" kc find "$MNT" --service wu
check_error "its attributes too" "errSecInteractionNotAllowed (-25308)" kc find "$MNT" --service wu --return attributes
expect_eq "AfterFirstUnlock stays readable when locked" "$(kc find "$MNT" --service afu)" "afu-secret"
check_error "--limit all meeting a locked item" "errSecInteractionNotAllowed (-25308)" kc find "$MNT" --limit all
check_error "add of a duplicate while locked" "errSecInteractionNotAllowed (-25308)" \
    kc add "$MNT" --service wu --accessible Always --data-file <(printf %s x)
check_error "add of a WhenUnlocked item while locked" "errSecInteractionNotAllowed (-25308)" \
    kc add "$MNT" --service new-wu --data-file <(printf %s x)
check "unlock" unlock_device
expect_eq "WhenUnlocked readable again" "$(kc find "$MNT" --service wu)" "wu-secret"
check "restart" "$DPFS" restart "$MNT"
check_error "AfterFirstUnlock is unavailable after restart" "errSecInteractionNotAllowed (-25308)" kc find "$MNT" --service afu
expect_eq "Always stays readable after restart" "$(kc find "$MNT" --service always)" "always-secret"
check "unlock after restart" unlock_device
expect_eq "AfterFirstUnlock readable after unlock" "$(kc find "$MNT" --service afu)" "afu-secret"

# --- apps and access groups -----------------------------------------------------------
plist() {  # plist FILE APP_ID GROUP...
    local file=$1 app=$2; shift 2
    {
        printf '<?xml version="1.0" encoding="UTF-8"?>\n'
        printf '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
        printf '<plist version="1.0">\n<dict>\n\t<key>application-identifier</key>\n\t<string>%s</string>\n' "$app"
        printf '\t<key>keychain-access-groups</key>\n\t<array>\n'
        for group in "$@"; do printf '\t\t<string>%s</string>\n' "$group"; done
        printf '\t</array>\n\t<key>com.apple.developer.default-data-protection</key>\n'
        printf '\t<string>NSFileProtectionComplete</string>\n</dict>\n</plist>\n'
    } > "$file"
}
TEAM=ABCDE12345
plist "$WORK/mail.plist" "$TEAM.com.example.mail" "$TEAM.com.example.mail" "$TEAM.com.example.shared"
plist "$WORK/notes.plist" "$TEAM.com.example.notes" "$TEAM.com.example.notes" "$TEAM.com.example.shared"
plist "$WORK/admin.plist" "$TEAM.com.example.admin" "$TEAM.*"
check "register mail" "$DPFS" app add "$MNT" --entitlements "$WORK/mail.plist"
check "register notes" "$DPFS" app add "$MNT" --entitlements "$WORK/notes.plist"
check "register a team-wide app" "$DPFS" app add "$MNT" --entitlements "$WORK/admin.plist"
check "mail adds a private item" kc add "$MNT" --app com.example.mail --service token --account private --data-file <(printf %s mail-only)
check "mail shares an item" kc add "$MNT" --app com.example.mail --service token --account shared \
    --access-group "$TEAM.com.example.shared" --data-file <(printf %s for-both)
expect_eq "new items go to the first group" \
    "$(kc find "$MNT" --app com.example.mail --service token --account private --return attributes | sed -n 's/^accessGroup: //p')" \
    "$TEAM.com.example.mail"
expect_eq "notes reads the shared item" "$(kc find "$MNT" --app com.example.notes --service token --account shared)" "for-both"
check_error "notes never sees mail's private item" "errSecItemNotFound (-25300)" \
    kc find "$MNT" --app com.example.notes --service token --account private
check_error "the sandbox's app sees neither" "errSecItemNotFound (-25300)" kc find "$MNT" --service token
expect_eq "a TEAMID.* wildcard sees the whole team" \
    "$(kc find "$MNT" --app com.example.admin --service token --limit all --return attributes | grep -c '^account:')" "2"
check_error "a group the app lacks" "errSecMissingEntitlement (-34018)" \
    kc add "$MNT" --app com.example.notes --service x --access-group "$TEAM.com.example.mail" --data-file <(printf %s x)
check_error "an unregistered app" "errSecMissingEntitlement (-34018)" kc find "$MNT" --app com.nobody --service x
printf 'not a plist' > "$WORK/bad.plist"
check_fails "a bad plist is refused" "$DPFS" app add "$MNT" --entitlements "$WORK/bad.plist"

# --- kill -9 of the daemon during writes ----------------------------------------------
pid=$(daemon_pid)
( i=0; while [ $i -lt 500 ]; do "$DPFS" keychain add "$MNT" --service crash --account "a$i" --accessible Always \
      --data-file <(printf %s "d$i") >/dev/null 2>&1 || break; i=$((i + 1)); done ) &
writer=$!
sleep 1
[ -n "$pid" ] && kill -9 "$pid"
wait "$writer" 2>/dev/null
mount_device   # takes the dead mount down
check "unlock after the crash" unlock_device
expect_eq "items from before the crash survive" "$(kc find "$MNT" --service mail --account alice2)" "hunter2"
crashed=$(kc find "$MNT" --service crash --limit all --return attributes 2>/dev/null | grep -c '^account:')
[ "$crashed" -gt 0 ] && pass "writes before the kill are kept ($crashed)" || fail "writes before the kill are kept" "$crashed"
expect_eq "every kept write is whole" "$(kc find "$MNT" --service crash --account a0)" "d0"
if command -v sqlite3 >/dev/null; then
    expect_eq "the database passes integrity_check" "$(sqlite3 "file:$DEV/keychain.sqlite?mode=ro" 'PRAGMA integrity_check')" "ok"
fi

# --- WhenPasscodeSetThisDeviceOnly ----------------------------------------------------
check "WhenPasscodeSet item with a passcode" kc add "$MNT" --service pin --accessible WhenPasscodeSetThisDeviceOnly --data-file <(printf %s pin)
check "remove the passcode" "$DPFS" passcode remove "$MNT" --passcode-file "$PASS"
check_error "WhenPasscodeSet items die with the passcode" "errSecItemNotFound (-25300)" kc find "$MNT" --service pin
check_error "and cannot be added without one" "errSecNotAvailable (-25291)" \
    kc add "$MNT" --service pin --accessible WhenPasscodeSetThisDeviceOnly --data-file <(printf %s pin)
expect_eq "other items survive" "$(kc find "$MNT" --service wu)" "wu-secret"

finish
