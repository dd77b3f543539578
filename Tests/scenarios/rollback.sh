#!/usr/bin/env bash
# Issue 15: putting back an older copy of the device directory, of its
# keybag or of its item store is refused at mount and by fsck with one clear line —
# it never resets the failed-attempt count or undoes an erase. The authority is the
# device's record in the secret store ($SECRETS/UUID.state, dpfs(5)).
source "$(dirname "$0")/lib.sh"

attempt() { printf 'wrong%s\n' "$1" > "$WORK/w"; chmod 600 "$WORK/w"; "$DPFS" unlock "$MNT" --passcode-file "$WORK/w" 2>&1; }
OLD="older than the device's record in secret store file:$SECRETS"
# What a refused mount leaves as it found it: the keybag's and the keychain's bytes (its
# -wal and -shm too, when there are) and the device directory's names (no -wal or -shm
# made beside the keychain). The copy put back is the user's, and the evidence of a
# rollback.
found() { (cd "$DEV" && ls -A && sha256sum keybag.json keychain.sqlite*); }

# 1. The whole device directory from before five failures.
setup_device
"$DPFS" unmount "$MNT" || fail "unmount"
cp -a "$DEV" "$WORK/before-failures"
mount_device
for i in 1 2 3 4 5; do attempt "$i" >/dev/null; done
expect_eq "five failures counted" "$("$DPFS" status "$MNT" --json | json_field failedAttempts)" 5
"$DPFS" unmount "$MNT" || fail "unmount"
cp -a "$DEV" "$WORK/after-failures"
expect_eq "keybag.seq is gone: the secret store keeps the record" "$(ls "$DEV"/keybag.seq 2>/dev/null)" ""
expect_eq "the record is 0600 beside the secret" "$(stat -c %a "$SECRETS"/*.state)" 600
rm -rf "$DEV"; cp -a "$WORK/before-failures" "$DEV"
before=$(found)
out=$("$DPFS" mount "$DEV" "$MNT" 2>&1) && fail "the old copy is refused at mount" "it mounted" || {
    case "$out" in *"the keybag is $OLD (generation "*" < "*"): an old copy was put back"*)
        pass "the old copy is refused at mount with one clear line" ;;
        *) fail "the old copy is refused at mount with one clear line" "$out" ;; esac
    expect_eq "that is one line" "$(printf '%s\n' "$out" | wc -l)" 1; }
expect_eq "the refused copy is left as it was found" "$(found)" "$before"
check_error "fsck reports the old copy" "the keybag is $OLD" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
rm -rf "$DEV"; cp -a "$WORK/after-failures" "$DEV"
mount_device
json=$("$DPFS" status "$MNT" --json)
expect_eq "the real device still counts five failures" "$(printf '%s' "$json" | json_field failedAttempts)" 5
check_error "and still makes the right passcode wait" "try again in" unlock_device
"$DPFS" unmount "$MNT" || fail "unmount"

# 2. keychain.sqlite alone, from before an add.
rm -rf "$DEV"
setup_device
unlock_device
printf 'one' | "$DPFS" keychain add "$MNT" --service first >/dev/null || fail "keychain add"
"$DPFS" unmount "$MNT" || fail "unmount"
cp -a "$DEV/keychain.sqlite" "$WORK/keychain-before"
mount_device
unlock_device
printf 'two' | "$DPFS" keychain add "$MNT" --service second >/dev/null || fail "keychain add"
"$DPFS" unmount "$MNT" || fail "unmount"
cp -a "$WORK/keychain-before" "$DEV/keychain.sqlite"
rm -f "$DEV/keychain.sqlite-wal" "$DEV/keychain.sqlite-shm"
before=$(found)
check_error "an old keychain.sqlite is refused at mount" \
    "the keychain is $OLD (generation [0-9]* < [0-9]*): an old copy was put back" "$DPFS" mount "$DEV" "$MNT"
expect_eq "the refused keychain is left byte for byte, with no -wal or -shm made" "$(found)" "$before"
check_error "fsck reports the old keychain" "the keychain is $OLD" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
expect_eq "and fsck leaves it so too" "$(found)" "$before"

# 2b. The same old copy with its counter raised past the record's (sqlite3): its rows
# are not the recorded ones.
ALTERED="the keychain does not match the device's record in secret store file:$SECRETS"
sqlite3 "$DEV/keychain.sqlite" "UPDATE meta SET value = value + 5 WHERE key = 'generation'"
before=$(found)
check_error "an old keychain.sqlite with its generation raised is refused at mount" \
    "$ALTERED (generation [0-9]*, recorded [0-9]*, other items): it was put back from an older copy, edited or damaged" \
    "$DPFS" mount "$DEV" "$MNT"
expect_eq "the edited keychain is left as it was found" "$(found)" "$before"
check_error "fsck reports it" "$ALTERED" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
out=$("$DPFS" mount "$DEV" "$MNT" 2>&1)
expect_eq "in one line" "$(printf '%s\n' "$out" | wc -l)" "1"
check_fails "and nothing is mounted" grep -qs " $MNT fuse" /proc/mounts

# 2c. The old copy as a crash leaves it: a write in its -wal and no -shm beside it (a
# copy made while the keychain was open). The refusal names the generation that write
# raised, so the -wal is read, and leaves the -wal as it was, with no -shm made.
mkdir "$WORK/crashed"
cp "$WORK/keychain-before" "$WORK/crashed/keychain.sqlite"
raised=$(sqlite3 "$WORK/crashed/keychain.sqlite" "SELECT value + 7 FROM meta WHERE key = 'generation'")
rm -f "$DEV/keychain.sqlite-wal" "$DEV/keychain.sqlite-shm"
sqlite3 "$WORK/crashed/keychain.sqlite" >/dev/null <<EOF
PRAGMA wal_autocheckpoint = 0;
UPDATE meta SET value = value + 7 WHERE key = 'generation';
.shell cp $WORK/crashed/keychain.sqlite $WORK/crashed/keychain.sqlite-wal $DEV/
EOF
expect_eq "the crashed copy has a -wal and no -shm" "$(cd "$DEV" && ls -d keychain.sqlite-*)" "keychain.sqlite-wal"
before=$(found)
check_error "an old keychain with a write in its -wal is refused at mount, that write read" \
    "$ALTERED (generation $raised, recorded [0-9]*, other items)" "$DPFS" mount "$DEV" "$MNT"
expect_eq "the refused keychain and its -wal are left byte for byte, with no -shm made" "$(found)" "$before"
check_error "fsck reports it" "$ALTERED (generation $raised," "$DPFS" fsck "$DEV" --passcode-file "$PASS"
expect_eq "and fsck leaves them so too" "$(found)" "$before"

# 2d. A deleted item's row put back into the current database, from an older copy.
rm -rf "$DEV"
setup_device
unlock_device
printf 'kept' | "$DPFS" keychain add "$MNT" --service kept >/dev/null || fail "keychain add"
printf 'deleted secret' | "$DPFS" keychain add "$MNT" --service doomed --accessible Always >/dev/null || fail "keychain add"
"$DPFS" unmount "$MNT" || fail "unmount"
cp -a "$DEV/keychain.sqlite" "$WORK/keychain-with-doomed"
mount_device
unlock_device
check "the item is deleted" "$DPFS" keychain delete "$MNT" --service doomed
"$DPFS" unmount "$MNT" || fail "unmount"
cp -a "$DEV/keychain.sqlite" "$WORK/keychain-current"
sqlite3 "$DEV/keychain.sqlite" "ATTACH '$WORK/keychain-with-doomed' AS old;
    INSERT INTO items SELECT * FROM old.items WHERE id NOT IN (SELECT id FROM main.items);"
expect_eq "the row is back in the database" "$(sqlite3 "$DEV/keychain.sqlite" 'SELECT count(*) FROM items')" "2"
before=$(found)
check_error "a deleted row put back is refused at mount" "$ALTERED" "$DPFS" mount "$DEV" "$MNT"
expect_eq "the keychain with the row put back is left as it was found" "$(found)" "$before"
check_error "fsck reports it" "$ALTERED" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
cp -a "$WORK/keychain-current" "$DEV/keychain.sqlite"
mount_device
unlock_device
expect_eq "the real keychain mounts and serves what it holds" \
    "$("$DPFS" keychain find "$MNT" --service kept 2>&1)" "kept"
check_error "and not the deleted item" "errSecItemNotFound" "$DPFS" keychain find "$MNT" --service doomed

# 2e. The older copy written over the keychain in place (cp) while the daemon runs: its
# connections read the same file, so only a watch on the file keeps the copy out.
cp "$WORK/keychain-with-doomed" "$DEV/keychain.sqlite"
check_error "a deleted item does not come back while the device runs" "changed by another hand" \
    "$DPFS" keychain find "$MNT" --service doomed
check_error "nor does a write go through on the copy" "changed by another hand" \
    sh -c "printf later | '$DPFS' keychain add '$MNT' --service later"
"$DPFS" unmount "$MNT" || fail "unmount"
check "the copy is left as it was put there" cmp "$WORK/keychain-with-doomed" "$DEV/keychain.sqlite"
check_error "and the next mount refuses it" "the device's record" "$DPFS" mount "$DEV" "$MNT"

# 3. An erase after N failures, undone by putting back the keybag from before.
rm -rf "$DEV"
setup_device --erase-after 3
"$DPFS" unmount "$MNT" || fail "unmount"
cp -a "$DEV/keybag.json" "$WORK/keybag-before-erase"
mount_device
for i in 1 2 3; do out=$(attempt "$i"); done
case "$out" in *erased*) pass "the third failure erases" ;; *) fail "the third failure erases" "$out" ;; esac
"$DPFS" unmount "$MNT" || fail "unmount"
cp -a "$DEV/keybag.json" "$WORK/keybag-erased"
cp -a "$WORK/keybag-before-erase" "$DEV/keybag.json"
check_error "the keybag from before the erase is refused" "the keybag is $OLD" "$DPFS" mount "$DEV" "$MNT"
cp -a "$WORK/keybag-erased" "$DEV/keybag.json"
mount_device
expect_eq "the erased keybag mounts, still erased" "$("$DPFS" status "$MNT" --json | json_field erased)" True

# Another secret in the store where this device's was: the error names the store and
# the device, not a damaged keybag, and the device mounts again with its own secret.
"$DPFS" unmount "$MNT" || fail "unmount"
uuid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["deviceUUID"])' "$DEV/keybag.json")
secret="$SECRETS/$uuid.secret"
cp -a "$secret" "$WORK/own.secret"
head -c "$(stat -c %s "$secret")" /dev/urandom > "$secret"
out=$("$DPFS" mount "$DEV" "$MNT" 2>&1); rc=$?
case "$rc/$out" in
    1/*"device secret from file:$SECRETS (device $uuid)"*) pass "a wrong device secret is named as such: $out" ;;
    *) fail "a wrong device secret is named as such" "exit $rc: $out" ;;
esac
expect_eq "in one line" "$(printf '%s\n' "$out" | wc -l)" "1"
cp -a "$WORK/own.secret" "$secret"
mount_device

# 4. A directory's class record from before its class was raised, put back: the
# keybag records the raise, so the older record reads as EIO and no file is made
# under the weaker class, before the first unlock too.
"$DPFS" unmount "$MNT" || fail "unmount"
rm -rf "$DEV"
setup_device
unlock_device
mkdir "$MNT/Documents/vault"
# Lowered from its first class, a directory has had no record weaker than its new one:
# nothing to vouch for, so the keybag is not saved (a tree lowered saves it not once).
keybag_before=$(sha256sum < "$DEV/keybag.json")
setfattr -n user.dpfs.protection -v none "$MNT/Documents/vault"
expect_eq "a first lowering leaves the keybag as it was" "$(sha256sum < "$DEV/keybag.json")" "$keybag_before"
VAULT=$(backing "$MNT/Documents/vault")
none_record=$(getfattr --absolute-names -e hex -n user.dpfs.protection "$VAULT" | sed -n 's/^user.dpfs.protection=//p')
check "raise the directory to complete" setfattr -n user.dpfs.protection -v complete "$MNT/Documents/vault"
"$DPFS" unmount "$MNT" || fail "unmount"
setfattr -n user.dpfs.protection -v "$none_record" "$VAULT"
mount_device
check_error "before first unlock, the old record reads as EIO" "Input/output error" \
    getfattr -n user.dpfs.protection "$MNT/Documents/vault"
check "the daemon says it was put back" grep -q 'weaker than the keybag records' "$DEV/daemon.log"
check_error "and no file is made under the old class" "Input/output error" sh -c "echo x > '$MNT/Documents/vault/new.txt'"
expect_eq "nothing was created" "$(ls -A "$VAULT" | wc -l)" "0"
check_error "fsck names the put-back record" "put back from before its class was raised" \
    sh -c "'$DPFS' unmount '$MNT' && '$DPFS' fsck '$DEV' --passcode-file '$PASS'"
mount_device
unlock_device
check "unlocked, the class is set again" setfattr -n user.dpfs.protection -v complete "$MNT/Documents/vault"
check "a lowering through the mount is recorded too" setfattr -n user.dpfs.protection -v none "$MNT/Documents/vault"
check "and files are made in it" sh -c "echo x > '$MNT/Documents/vault/new.txt'"
expect_eq "in its new class" "$(getfattr --absolute-names --only-values -n user.dpfs.protection "$MNT/Documents/vault/new.txt")" "none"

# 5. A copy of the whole device directory mounted beside the original: both share the
# record, so the copy is refused before it reads the secret store, the original keeps
# working, and once the original is unmounted the copy, now older, is a rollback.
"$DPFS" unmount "$MNT" || fail "unmount"
COPY="$WORK/device-copy"
MNT2="$WORK/mnt2"
mkdir -p "$MNT2"
scenario_cleanup() {
    if grep -qs " $MNT2 fuse" /proc/mounts; then "$DPFS" unmount "$MNT2" 2>/dev/null || fusermount3 -uz "$MNT2" 2>/dev/null; fi
}
cp -a "$DEV" "$COPY"
copy_found() { (cd "$COPY" && ls -A && sha256sum keybag.json keychain.sqlite*); }
record() { sha256sum "$SECRETS"/*.state; }
mount_device
unlock_device
before=$(copy_found)
record_before=$(record)
out=$("$DPFS" mount "$COPY" "$MNT2" 2>&1); rc=$?
case "$rc/$out" in
    "1/Error: device "*" is already mounted from $DEV on $MNT: a copy of a device directory cannot be mounted beside it; unmount it first")
        pass "a copy is refused while the original is mounted, naming where" ;;
    *) fail "a copy is refused while the original is mounted, naming where" "exit $rc: $out" ;;
esac
expect_eq "in one line" "$(printf '%s\n' "$out" | wc -l)" "1"
check_fails "and the copy is not mounted" grep -qs " $MNT2 fuse" /proc/mounts
expect_eq "the refused copy is left as it was found" "$(copy_found)" "$before"
expect_eq "and the device's record is untouched" "$(record)" "$record_before"
check_error "fsck of the copy is refused too" "a copy of a device directory cannot be mounted beside it" \
    "$DPFS" fsck "$COPY" --passcode-file "$PASS"
check_error "and so is forget of the copy" "a copy of a device directory cannot be mounted beside it" \
    "$DPFS" forget "$COPY"
check "the secret is still in the store" test -s "$SECRETS/$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["deviceUUID"])' "$DEV/keybag.json").secret"
check "the original still locks" "$DPFS" lock "$MNT" --now
check "and unlocks with its passcode" unlock_device
printf 'local' | "$DPFS" keychain add "$MNT" --service local-only >/dev/null || fail "keychain add"
"$DPFS" unmount "$MNT" || fail "unmount"
check_error "with the original unmounted, the older copy is a rollback" "$OLD" "$DPFS" mount "$COPY" "$MNT2"
mount_device
unlock_device
expect_eq "and the original mounts with its item" "$("$DPFS" keychain find "$MNT" --service local-only 2>&1)" "local"
finish
