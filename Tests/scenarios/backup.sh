#!/usr/bin/env bash
# dpfs backup and restore (issue 39): a device with files of every class, nested
# directories, a symlink, a hard link, modes and times, and keychain items of every
# migratable and two ThisDeviceOnly accessibilities (one of a second app); backup of a
# locked device refused; the backup file holds no name, content or attribute in the
# clear; a wrong password, a flipped byte, a truncated file each refused with one line
# and nothing created; a restore onto a new device (new passcode, new keys) keeps the
# files with their classes, modes and times and the migratable items, and not the
# ThisDeviceOnly ones.
# --to refuses what a rename would replace (a device node, FIFO, socket, directory, or
# a link to one) and follows a link to a regular file.
# A restore into an empty mount point makes the device there; interrupted, leaves it empty.
source "$(dirname "$0")/lib.sh"

kc() { "$DPFS" keychain "$@"; }
setup_restore_target phone.dpfsbackup

MOUNTPOINT="$WORK/mountpoint"
scenario_cleanup() {
    # A killed restore's temporary mount (its device is in $WORK, its mount point
    # wherever the dpfs under test put it), if a check failed before it was taken down.
    awk -v w="dpfs:$WORK/" 'index($1, w) == 1 && $1 ~ /\.restore-[^\/]*$/ {print $2}' /proc/mounts | while read -r m; do
        fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
    done
    unmount_restore_target
    # After the device on it is unmounted: the tmpfs the mount point checks mount.
    if grep -qs " $MOUNTPOINT tmpfs" /proc/mounts; then umount "$MOUNTPOINT" 2>/dev/null || umount -l "$MOUNTPOINT"; fi
}

# mount_tmpfs: an empty filesystem on $MOUNTPOINT, as one mounted for a device (mode
# 1777, a tmpfs's own); fails where mounting needs the root this is not.
mount_tmpfs() {
    mkdir -p "$MOUNTPOINT" && mount -t tmpfs -o size=128m,mode=1777 dpfs-backup-test "$MOUNTPOINT" 2>/dev/null
}

# restore_refused WHAT BACKUP_FILE MESSAGE: restore fails with one line naming MESSAGE,
# and leaves no device directory, no half-made device beside it, no new secret.
restore_refused() {
    local what=$1 file=$2 message=$3 out status secrets_before
    secrets_before=$(ls "$SECRETS" | wc -l)
    out=$("$DPFS" restore "$NEW" --from "$file" --password-file "${4:-$PASSWORD}" --passcode-file "$PASS2" \
          --secret-store "file:$SECRETS" 2>&1)
    status=$?
    if [ "$status" -ne 0 ] && printf '%s' "$out" | grep -q -e "$message" && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ]; then
        pass "$what: refused with one line"
    else
        fail "$what: refused with one line" "exit $status: $out"
    fi
    if [ ! -e "$NEW" ] && [ -z "$(ls -A "$WORK" | grep '^\.restored')" ] && [ "$(ls "$SECRETS" | wc -l)" = "$secrets_before" ]; then
        pass "$what: nothing was created"
    else
        fail "$what: nothing was created" "$(ls -A "$WORK")"
    fi
}

setup_device
check "unlock" unlock_device

# --- a sandbox with something of everything ---------------------------------------
D="$MNT/Documents"
mkdir -p "$D/nested/deeper" "$MNT/Library/Application Support/db"
for class in none complete completeUnlessOpen untilFirstAuth; do
    printf 'content of a %s file\n' "$class" > "$D/$class.txt"
    "$DPFS" protection set "$class" "$D/$class.txt"
done
"$DPFS" protection set complete "$D/nested"
printf 'MARKERCONTENTz9k\n' > "$D/nested/deeper/MARKERNAMEq7x.txt"
head -c 3000000 /dev/urandom > "$D/nested/big.bin"
printf 'read only\n' > "$D/readonly.txt"; chmod 0400 "$D/readonly.txt"
printf '#!/bin/sh\n' > "$D/tool.sh"; chmod 0750 "$D/tool.sh"
printf 'accents\n' > "$D/naïve ✓.txt"
ln -s nested/deeper/MARKERNAMEq7x.txt "$D/link"
ln "$D/none.txt" "$D/hardlink"
printf 'sqlite\n' > "$MNT/Library/Application Support/db/store.sqlite"
touch -d '2001-02-03 04:05:06.123456789' "$D/untilFirstAuth.txt"
touch -d '1999-12-31 23:59:59' "$D/nested/deeper"
chmod 0700 "$D/nested"
printf 'scratch\n' > "$MNT/tmp/scratch"
# A tree whose paths pass PATH_MAX (25 names of 200 bytes), with a link of each kind at
# the bottom: made, and later read, one directory at a time.
LONG=$(printf 'd%.0s' $(seq 200))
deep_cd() { cd "$1/deep" && for i in $(seq 25); do cd "$LONG$i" || return 1; done; }
(mkdir "$D/deep" && cd "$D/deep" && for i in $(seq 25); do mkdir "$LONG$i" && cd "$LONG$i" || exit 1; done
 printf 'at the bottom\n' > leaf.txt && ln -s leaf.txt leaf.link && ln leaf.txt leaf.hard) \
    || fail "a tree deeper than PATH_MAX"
printf 'cached\n' > "$MNT/Library/Caches/cached"

# --- keychain items of the sandbox's app and of a second app -------------------------
TEAM=ABCDE12345
cat > "$WORK/mail.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict>
<key>application-identifier</key><string>$TEAM.com.example.mail</string>
<key>keychain-access-groups</key><array><string>$TEAM.com.example.mail</string></array>
</dict></plist>
PLIST
check "register a second app" "$DPFS" app add "$MNT" --entitlements "$WORK/mail.plist"
check "add a WhenUnlocked item" kc add "$MNT" --service MARKERSERVICEp3 --account MARKERACCOUNTw2 --label MARKERLABELk8 \
    --accessible WhenUnlocked --data-file <(printf MARKERSECRETm4)
check "add an AfterFirstUnlock item" kc add "$MNT" --service afu --account a --accessible AfterFirstUnlock --data-file <(printf afu-secret)
check "add an Always item" kc add "$MNT" --service always --accessible Always --data-file <(printf always-secret)
check "add a synchronizable item" kc add "$MNT" --service synced --synchronizable yes --data-file <(printf synced-secret)
check "add an internet password" kc add "$MNT" --class inet --server example.com --account bob --port 443 \
    --data-file <(printf inet-secret)
check "add a WhenUnlockedThisDeviceOnly item" kc add "$MNT" --service wutdo --accessible WhenUnlockedThisDeviceOnly \
    --data-file <(printf wutdo-secret)
check "add an AfterFirstUnlockThisDeviceOnly item" kc add "$MNT" --service afutdo \
    --accessible AfterFirstUnlockThisDeviceOnly --data-file <(printf afutdo-secret)
check "add an item of the second app" kc add "$MNT" --app com.example.mail --service mail --account carol \
    --data-file <(printf mail-secret)
check "add a ThisDeviceOnly item of the second app" kc add "$MNT" --app com.example.mail --service mailtdo \
    --accessible AfterFirstUnlockThisDeviceOnly --data-file <(printf mailtdo-secret)
created=$(kc find "$MNT" --service MARKERSERVICEp3 --return attributes | sed -n 's/^creationDate: //p')

# What the restored tree must show: path, mode, mtime to the nanosecond, type.
tree_listing() {
    (cd "$1" && find . ! -path ./tmp/scratch ! -path ./Library/Caches/cached ! -path './Documents/deep/*' -print0 | sort -z \
        | xargs -0 stat -c '%n %a %y %F %h')
}
before=$(tree_listing "$MNT")

# --- a locked device is not backed up -------------------------------------------------
"$DPFS" lock "$MNT" --now >/dev/null
out=$("$DPFS" backup "$MNT" --to "$BACKUP" --password-file "$PASSWORD" 2>&1)
status=$?
expect_eq "backup of a locked device: the device-locked status" "$status" "14"
[ ! -e "$BACKUP" ] && [ -z "$(ls -A "$WORK" | grep 'phone.dpfsbackup.tmp')" ] \
    && pass "backup of a locked device leaves no file" || fail "backup of a locked device leaves no file" "$(ls -A "$WORK")"
check "unlock again" unlock_device

# --- the backup ------------------------------------------------------------------------
printf 'secret\n' > "$WORK/open-password"; chmod 644 "$WORK/open-password"
check_error "a password file others can read is refused" "must not be accessible" \
    "$DPFS" backup "$MNT" --to "$BACKUP" --password-file "$WORK/open-password"
check "backup" "$DPFS" backup "$MNT" --to "$BACKUP" --password-file "$PASSWORD"
expect_eq "the backup file is the owner's alone" "$(stat -c %a "$BACKUP")" "600"
expect_eq "the source tree is unchanged by the backup" "$(tree_listing "$MNT")" "$before"
for marker in MARKERNAMEq7x MARKERCONTENTz9k MARKERSERVICEp3 MARKERACCOUNTw2 MARKERLABELk8 MARKERSECRETm4 \
              com.example.mail "$TEAM" untilFirstAuth Documents; do
    if grep -q -a -F "$marker" "$BACKUP"; then fail "the backup does not show $marker" "found in clear"
    else pass "the backup does not show $marker"; fi
done
size=$(stat -c %s "$BACKUP")

# --- refused backups: nothing created -------------------------------------------------
printf 'not the password\n' > "$WORK/wrong"; chmod 600 "$WORK/wrong"
restore_refused "wrong password" "$BACKUP" "wrong backup password" "$WORK/wrong"
for offset in 40 100 $((size / 2)) $((size - 5)); do
    cp "$BACKUP" "$WORK/flipped"
    flip_bit "$WORK/flipped" "$offset"
    restore_refused "a byte flipped at $offset" "$WORK/flipped" "damaged\|wrong backup password"
done
# A cut right at a chunk boundary (header 84 bytes, chunks of 65536 + 17): the FINAL
# chunk is missing; a cut inside the last chunk: it fails its tag.
head -c $((84 + 65553 * 2)) "$BACKUP" > "$WORK/truncated"
restore_refused "truncated at a chunk boundary" "$WORK/truncated" "truncated"
head -c $((size - 1)) "$BACKUP" > "$WORK/truncated"
restore_refused "truncated inside the last chunk" "$WORK/truncated" "cut short"
cp "$BACKUP" "$WORK/appended"; printf 'x' >> "$WORK/appended"
restore_refused "a byte appended" "$WORK/appended" "bytes added after it\|data follows"
# Restore reads the backup twice: a pipe is refused before the password is asked.
restore_refused "a pipe" <(cat "$BACKUP") "save it to a file first"
mkdir -p "$WORK/occupied"; touch "$WORK/occupied/file"
check_error "a non-empty DEVICE_DIR is refused" "not empty" \
    "$DPFS" restore "$WORK/occupied" --from "$BACKUP" --password-file "$PASSWORD" --passcode-file "$PASS2" --secret-store "file:$SECRETS"

# --- the restore onto a new device -------------------------------------------------------
check "restore" "$DPFS" restore "$NEW" --from "$BACKUP" --password-file "$PASSWORD" --passcode-file "$PASS2" \
    --secret-store "file:$SECRETS"
[ -z "$(ls -A "$WORK" | grep '^\.restored')" ] && pass "no build directory is left" || fail "no build directory is left"
[ "$(grep -o '"deviceUUID" *: *"[^"]*"' "$NEW/keybag.json")" != "$(grep -o '"deviceUUID" *: *"[^"]*"' "$DEV/keybag.json")" ] \
    && pass "the restored device has a new identity" || fail "the restored device has a new identity"
check "mount the restored device" "$DPFS" mount "$NEW" "$MNT2"
check_error "the old passcode does not open it" "wrong passcode\|Wrong passcode" "$DPFS" unlock "$MNT2" --passcode-file "$PASS"
check "the new passcode does" "$DPFS" unlock "$MNT2" --passcode-file "$PASS2"

after=$(tree_listing "$MNT2")
expect_eq "paths, modes, mtimes, types and link counts are restored" "$after" "$before"
R="$MNT2/Documents"
for class in none complete completeUnlessOpen untilFirstAuth; do
    expect_eq "$class file keeps its class" "$("$DPFS" protection get "$R/$class.txt")" "$class"
    expect_eq "$class file keeps its content" "$(cat "$R/$class.txt")" "content of a $class file"
done
expect_eq "a directory keeps its class" "$("$DPFS" protection get "$R/nested")" "complete"
# Every file and directory: the class it had.
classes_of() { (cd "$1" && find . ! -type l ! -path ./tmp/scratch ! -path ./Library/Caches/cached ! -path './Documents/deep/*' -print0 | sort -z \
    | xargs -0 "$DPFS" protection get); }
expect_eq "every file and directory keeps its class" "$(classes_of "$MNT2")" "$(classes_of "$MNT")"
check "a multi-chunk file is byte-exact" cmp "$D/nested/big.bin" "$R/nested/big.bin"
expect_eq "a non-ASCII name" "$(cat "$R/naïve ✓.txt")" "accents"
expect_eq "the symlink keeps its target" "$(readlink "$R/link")" "nested/deeper/MARKERNAMEq7x.txt"
expect_eq "the symlink resolves" "$(cat "$R/link")" "MARKERCONTENTz9k"
expect_eq "the hard link is one file" "$(stat -c %i "$R/hardlink")" "$(stat -c %i "$R/none.txt")"
expect_eq "a tree deeper than PATH_MAX is restored, its links too" \
    "$(deep_cd "$R" && cat leaf.txt && readlink leaf.link && stat -c %h leaf.hard)" "at the bottom
leaf.txt
2"
[ ! -e "$MNT2/tmp/scratch" ] && pass "tmp/ contents are not backed up" || fail "tmp/ contents are not backed up"
[ ! -e "$MNT2/Library/Caches/cached" ] && pass "Library/Caches contents are not backed up" || fail "Library/Caches contents are not backed up"

expect_eq "a WhenUnlocked item is restored" "$(kc find "$MNT2" --service MARKERSERVICEp3 --account MARKERACCOUNTw2)" "MARKERSECRETm4"
attributes=$(kc find "$MNT2" --service MARKERSERVICEp3 --return attributes)
case "$attributes" in *"label: MARKERLABELk8"*"accessible"*|*"accessible: WhenUnlocked"*) pass "its attributes are restored" ;;
                      *) fail "its attributes are restored" "$attributes" ;; esac
expect_eq "its creation date is kept" "$(printf '%s\n' "$attributes" | sed -n 's/^creationDate: //p')" "$created"
expect_eq "an AfterFirstUnlock item is restored" "$(kc find "$MNT2" --service afu --account a)" "afu-secret"
expect_eq "an Always item is restored" "$(kc find "$MNT2" --service always)" "always-secret"
expect_eq "a synchronizable item is restored" "$(kc find "$MNT2" --service synced --synchronizable yes)" "synced-secret"
expect_eq "an internet password is restored" "$(kc find "$MNT2" --class inet --server example.com --account bob)" "inet-secret"
expect_eq "the second app is registered and finds its item" \
    "$(kc find "$MNT2" --app com.example.mail --service mail --account carol)" "mail-secret"
check_error "WhenUnlockedThisDeviceOnly: errSecItemNotFound" "errSecItemNotFound (-25300)" kc find "$MNT2" --service wutdo
check_error "AfterFirstUnlockThisDeviceOnly: errSecItemNotFound" "errSecItemNotFound (-25300)" kc find "$MNT2" --service afutdo
check_error "the second app's ThisDeviceOnly item: errSecItemNotFound" "errSecItemNotFound (-25300)" \
    kc find "$MNT2" --app com.example.mail --service mailtdo
expect_eq "ThisDeviceOnly items are still on the old device" "$(kc find "$MNT" --service wutdo)" "wutdo-secret"

# The restored device behaves as a device: a lock takes its complete files away.
"$DPFS" lock "$MNT2" --now >/dev/null
check_error "restored complete file is refused while locked" "Operation not permitted" cat "$R/complete.txt"
check_error "restored WhenUnlocked item is refused while locked" "errSecInteractionNotAllowed" \
    kc find "$MNT2" --service MARKERSERVICEp3
check "unmount the restored device" "$DPFS" unmount "$MNT2"

# --- a restore into an empty mount point --------------------------------------------------
# A filesystem mounted for the device, as init takes one: no rename can replace a mount
# point, so the device is made inside it and moved up, the keybag last.
if mount_tmpfs; then
    check "restore into an empty mount point" "$DPFS" restore "$MOUNTPOINT" --from "$BACKUP" \
        --password-file "$PASSWORD" --passcode-file "$PASS2" --secret-store "file:$SECRETS"
    grep -qs " $MOUNTPOINT tmpfs" /proc/mounts && pass "the mount point is still mounted" || fail "the mount point is still mounted"
    expect_eq "it has a device directory's mode and no hidden build directory" \
        "$(stat -c %a "$MOUNTPOINT") $(ls -A "$MOUNTPOINT" | grep -c '^\.')" "700 0"
    check "the device there mounts" "$DPFS" mount "$MOUNTPOINT" "$MNT2"
    check "and unlocks with the new passcode" "$DPFS" unlock "$MNT2" --passcode-file "$PASS2"
    expect_eq "and holds the backup's files" "$(cat "$MNT2/Documents/complete.txt")" "content of a complete file"
    check "unmount it" "$DPFS" unmount "$MNT2"
    umount "$MOUNTPOINT"
else
    log "mounting a tmpfs needs root: the restore into a mount point is not checked"
fi

# --- an app (a program under dpfs run) may not export the device's keychain ----------
check_error "an app cannot back up the device" "only the device's owner may export" \
    sh -c "'$DPFS' run '$MNT' -- '$DPFS' backup '$MNT' --to '$MNT/Documents/app.dpfsbackup' < '$PASSWORD'"
[ -z "$(ls -A "$D" | grep 'app.dpfsbackup')" ] && pass "the refused backup left no file" \
    || fail "the refused backup left no file" "$(ls -A "$D")"

# --- a backup written into the sandbox itself leaves itself out -----------------------------
# Both the file being written and the earlier backup it replaces: a second backup to
# the same path holds what the first did, not the first.
files_backed_up() { printf '%s\n' "$1" | sed -n 's/^backed up \([0-9]*\) files\{0,1\} .*/\1/p'; }
first=$(timeout 120 "$DPFS" backup "$MNT" --to "$D/self.dpfsbackup" --password-file "$PASSWORD" 2>&1)
expect_eq "a backup into the sandbox itself ends" "$?" "0"
[ -s "$D/self.dpfsbackup" ] && pass "and is there" || fail "and is there"
first_size=$(stat -c %s "$D/self.dpfsbackup")
second=$(timeout 120 "$DPFS" backup "$MNT" --to "$D/self.dpfsbackup" --password-file "$PASSWORD" 2>&1)
expect_eq "a second backup to the same path ends" "$?" "0"
expect_eq "it counts the files the first did" "$(files_backed_up "$second")" "$(files_backed_up "$first")"
expect_eq "and is the first's size" "$(stat -c %s "$D/self.dpfsbackup")" "$first_size"
check "restore the second" "$DPFS" restore "$WORK/self-restored" --from "$D/self.dpfsbackup" \
    --password-file "$PASSWORD" --passcode-file "$PASS2" --secret-store "file:$SECRETS"
check "mount it" "$DPFS" mount "$WORK/self-restored" "$MNT2"
check "unlock it" "$DPFS" unlock "$MNT2" --passcode-file "$PASS2"
expect_eq "it holds no backup" "$(find "$MNT2" -name '*.dpfsbackup*')" ""
check "unmount it" "$DPFS" unmount "$MNT2"

# --- --to: a regular file or a new name, nothing else ------------------------------------
# The backup is renamed over its target, and a rename over a device node, FIFO or socket
# would leave a regular file where it was: those, a directory, and a symbolic link to
# any of them or to nothing are refused with one line before anything is written. A
# link to a regular file is followed: that file is replaced, the link kept.
TO="$WORK/targets"
mkdir "$TO" "$TO/dir"
mkfifo "$TO/fifo"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$TO/socket"
ln -s fifo "$TO/to-fifo"
ln -s dir "$TO/to-dir"
ln -s missing "$TO/dangling"
refused="fifo socket dir to-fifo to-dir dangling"
# A character device of our own (the numbers of /dev/null), never a real one.
if mknod -m 666 "$TO/char" c 1 3 2>/dev/null; then
    ln -s char "$TO/to-char"
    refused="char to-char $refused"
else
    log "mknod needs root: --to a character device is not checked"
fi
nodes() { find "$TO" -mindepth 1 -exec stat -c '%n %F %a %t:%T %i %s %Y' {} + | sort; }
nodes_before=$(nodes)
for name in $refused; do
    out=$("$DPFS" backup "$MNT" --to "$TO/$name" --password-file "$PASSWORD" 2>&1)
    status=$?
    if [ "$status" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] \
        && printf '%s' "$out" | grep -q "not a regular file or a new name"; then
        pass "--to $name is refused with one line"
    else
        fail "--to $name is refused with one line" "exit $status: $out"
    fi
done
expect_eq "the refused targets are as they were, nothing beside them" "$(nodes)" "$nodes_before"
printf 'an older file\n' > "$TO/regular"
ln -s regular "$TO/to-regular"
check "--to a link to a regular file" "$DPFS" backup "$MNT" --to "$TO/to-regular" --password-file "$PASSWORD"
expect_eq "the link is kept" "$(stat -c %F "$TO/to-regular") -> $(readlink "$TO/to-regular")" "symbolic link -> regular"
expect_eq "the file it names is the backup" "$(stat -c %a "$TO/regular") $(head -c 8 "$TO/regular")" "600 DPFSBKUP"
# A relative link resolves from its own directory, whatever the working directory holds.
mkdir -p "$WORK/elsewhere/dir"
check "--to a new name through a linked directory" \
    sh -c "cd '$WORK/elsewhere' && '$DPFS' backup '$MNT' --to '$TO/to-dir/new.dpfsbackup' --password-file '$PASSWORD'"
[ -s "$TO/dir/new.dpfsbackup" ] && [ -z "$(ls -A "$WORK/elsewhere/dir")" ] \
    && pass "it is written where the link leads, not in the working directory's dir" \
    || fail "it is written where the link leads, not in the working directory's dir" "$(ls -A "$TO/dir" "$WORK/elsewhere/dir")"

# --- an interrupted restore leaves nothing ------------------------------------------------
# Stopped once its temporary mount is up, sent SIGTERM, let go: it stops at its next
# piece, unmounts, and removes the half-made device and its secret.
head -c 48000000 /dev/urandom > "$D/large.bin"
check "backup with a large file" "$DPFS" backup "$MNT" --to "$WORK/large.dpfsbackup" --password-file "$PASSWORD"
# Killed outright (SIGKILL), a backup leaves nothing beside its target: the file it
# writes has no name until it is whole (O_TMPFILE). Stopped first, once its output is
# open, so that the kill lands mid-way.
"$DPFS" backup "$MNT" --to "$WORK/killed.dpfsbackup" --password-file "$PASSWORD" >/dev/null 2>&1 &
backup_pid=$!
if within 60 sh -c "ls -l /proc/$backup_pid/fd 2>/dev/null | grep -q '$WORK/'"; then
    kill -STOP "$backup_pid"; kill -KILL "$backup_pid"; wait "$backup_pid" 2>/dev/null
    expect_eq "a killed backup leaves no file beside its target" "$(ls -A "$WORK" | grep -c 'killed\.dpfsbackup')" "0"
else
    wait "$backup_pid"
    fail "the killed backup opens its output"
fi
secrets_before=$(ls "$SECRETS" | wc -l)
"$DPFS" restore "$WORK/interrupted" --from "$WORK/large.dpfsbackup" --password-file "$PASSWORD" \
    --passcode-file "$PASS2" --secret-store "file:$SECRETS" >/dev/null 2>"$WORK/interrupted.err" &
restore_pid=$!
if within 60 grep -q "\.interrupted\.restore-" /proc/mounts; then
    kill -STOP "$restore_pid"; kill -TERM "$restore_pid"; kill -CONT "$restore_pid"
    wait "$restore_pid"; status=$?
    [ "$status" -ne 0 ] && grep -q "interrupted" "$WORK/interrupted.err" \
        && pass "an interrupted restore says so" || fail "an interrupted restore says so" "exit $status: $(cat "$WORK/interrupted.err")"
    ! grep -q "\.interrupted\.restore-" /proc/mounts && [ ! -e "$WORK/interrupted" ] \
        && [ -z "$(ls -A "$WORK" | grep '^\.interrupted')" ] && [ "$(ls "$SECRETS" | wc -l)" = "$secrets_before" ] \
        && pass "an interrupted restore leaves no mount, device or secret" \
        || fail "an interrupted restore leaves no mount, device or secret" "$(ls -A "$WORK"; grep restore- /proc/mounts)"
else
    wait "$restore_pid"
    fail "the restore's temporary mount appears" "$(cat "$WORK/interrupted.err")"
fi
# Killed outright (SIGKILL, the OOM killer), restore runs no clean-up of its own: its
# temporary mount's daemon sees it end and stops as on SIGTERM, the device locked and
# unmounted, instead of serving the restored files unlocked with nothing to lock it.
"$DPFS" restore "$WORK/killed" --from "$WORK/large.dpfsbackup" --password-file "$PASSWORD" \
    --passcode-file "$PASS2" --secret-store "file:$SECRETS" >/dev/null 2>&1 &
restore_pid=$!
if within 60 grep -q "\.killed\.restore-" /proc/mounts; then
    temporary=$(grep "\.killed\.restore-" /proc/mounts | awk '{print $2}' | head -1)
    temporary_daemon=$("$DPFS" status "$temporary" --json | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
    kill -KILL "$restore_pid"; wait "$restore_pid" 2>/dev/null
    check "a killed restore's temporary mount goes with it" within 60 sh -c '! grep -q "\.killed\.restore-" /proc/mounts'
    check "and so does its daemon" within 60 sh -c "[ -n '$temporary_daemon' ] && ! kill -0 '$temporary_daemon'"
    # The half-made device and its secret stay (nothing ran to remove them) until the
    # next restore into the same directory, which removes both.
    abandoned=$(cat "$WORK"/.killed.restore-*/keybag.json 2>/dev/null | json_field deviceUUID)
    expect_eq "the killed restore leaves its secret in the store" "$(ls "$SECRETS" | grep -c "^${abandoned:-none}\.secret$")" "1"
    check "a second restore takes the directory" "$DPFS" restore "$WORK/killed" --from "$WORK/large.dpfsbackup" \
        --password-file "$PASSWORD" --passcode-file "$PASS2" --secret-store "file:$SECRETS"
    expect_eq "removing the killed one's half-made device" "$(ls -A "$WORK" | grep -c '^\.killed\.restore-')" "0"
    expect_eq "and its secret-store entries" "$(ls -A "$SECRETS" | grep -c "^${abandoned:-none}")" "0"
    [ -n "$temporary" ] && [ ! -e "$temporary" ] && pass "and its temporary mount point" \
        || fail "and its temporary mount point" "${temporary:-none found} is left"
    mkdir -p "$WORK/killed-mnt"
    check "the new device mounts" "$DPFS" mount "$WORK/killed" "$WORK/killed-mnt"
    check "and unlocks" "$DPFS" unlock "$WORK/killed-mnt" --passcode-file "$PASS2"
    "$DPFS" unmount "$WORK/killed-mnt" >/dev/null 2>&1
else
    wait "$restore_pid"
    fail "the killed restore's temporary mount appears"
fi
# Killed with its daemon (both SIGKILL), a restore leaves a dead mount on its temporary
# mount point: the next restore takes it down and removes it with the rest.
"$DPFS" restore "$WORK/deadmount" --from "$WORK/large.dpfsbackup" --password-file "$PASSWORD" \
    --passcode-file "$PASS2" --secret-store "file:$SECRETS" >/dev/null 2>&1 &
restore_pid=$!
if within 60 grep -q "\.deadmount\.restore-" /proc/mounts; then
    temporary=$(grep "\.deadmount\.restore-" /proc/mounts | awk '{print $2}' | head -1)
    temporary_daemon=$("$DPFS" status "$temporary" --json | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
    if [ -n "$temporary_daemon" ]; then kill -KILL "$temporary_daemon"; fi
    kill -KILL "$restore_pid"; wait "$restore_pid" 2>/dev/null
    check "the killed daemon is gone" within 60 sh -c "[ -n '$temporary_daemon' ] && ! kill -0 '$temporary_daemon'"
    grep -q " $temporary fuse" /proc/mounts && pass "a dead mount is left on the temporary mount point" \
        || log "no dead mount was left (the kernel took it down)"
    check "a second restore takes the directory" "$DPFS" restore "$WORK/deadmount" --from "$WORK/large.dpfsbackup" \
        --password-file "$PASSWORD" --passcode-file "$PASS2" --secret-store "file:$SECRETS"
    ! grep -q "\.deadmount\.restore-" /proc/mounts && [ -n "$temporary" ] && [ ! -e "$temporary" ] \
        && [ "$(ls -A "$WORK" | grep -c '^\.deadmount\.restore-')" = 0 ] \
        && pass "taking down the dead mount and removing its mount point" \
        || fail "taking down the dead mount and removing its mount point" "$(grep restore- /proc/mounts; ls -A "$WORK")"
else
    wait "$restore_pid"
    fail "the second killed restore's temporary mount appears"
fi
secrets_before=$(ls "$SECRETS" | wc -l)
# Into a mount point, the half-made device is inside it: it goes, the mount point stays.
if mount_tmpfs; then
    "$DPFS" restore "$MOUNTPOINT" --from "$WORK/large.dpfsbackup" --password-file "$PASSWORD" \
        --passcode-file "$PASS2" --secret-store "file:$SECRETS" >/dev/null 2>"$WORK/interrupted.err" &
    restore_pid=$!
    if within 60 grep -q "$MOUNTPOINT/\.restore-" /proc/mounts; then
        kill -STOP "$restore_pid"; kill -TERM "$restore_pid"; kill -CONT "$restore_pid"
        wait "$restore_pid"; status=$?
        [ "$status" -ne 0 ] && [ -z "$(ls -A "$MOUNTPOINT")" ] && ! grep -q "$MOUNTPOINT/\.restore-" /proc/mounts \
            && [ "$(ls "$SECRETS" | wc -l)" = "$secrets_before" ] \
            && pass "an interrupted restore into a mount point leaves it empty" \
            || fail "an interrupted restore into a mount point leaves it empty" "exit $status: $(ls -A "$MOUNTPOINT")"
    else
        wait "$restore_pid"
        fail "the restore's temporary mount appears" "$(cat "$WORK/interrupted.err")"
    fi
    umount "$MOUNTPOINT"
fi
finish
