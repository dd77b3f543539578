#!/usr/bin/env bash
# Issue 15: names and symlink targets are sealed in the backing tree (NameCipher), so a
# copy of the device directory shows none of them; through the mount every tool sees
# them as written, long names included.
source "$(dirname "$0")/lib.sh"

setup_device
unlock_device
D="$MNT/Documents"
LONG=$(printf 'L%.0s' $(seq 255))
mkdir "$D/Quarterly-Reports"
echo secret > "$D/Quarterly-Reports/acquisition-plan.txt"
echo long > "$D/$LONG"
ln -s "../Documents/Quarterly-Reports/acquisition-plan.txt" "$D/shortcut-to-plan"
ln "$D/$LONG" "$D/Quarterly-Reports/$LONG"
echo "é" > "$D/résumé-日本語.txt"
sync

listing=$(find "$DEV" -printf '%p %l\n')
for word in Quarterly acquisition shortcut résumé 日本語 LLLLLLLLLL Documents Library Caches; do
    case "$listing" in *"$word"*) fail "the device directory shows no '$word'" ;; *) pass "the device directory shows no '$word'" ;; esac
done
if grep -rqa -e acquisition-plan -e Quarterly "$DEV"; then fail "no name inside any backing file"; else pass "no name inside any backing file"; fi
expect_eq "the mount lists the names as written" "$(ls "$D" | LC_ALL=C sort | tr '\n' '|')" \
    "$LONG|Quarterly-Reports|résumé-日本語.txt|shortcut-to-plan|"
expect_eq "a 255-byte name reads" "$(cat "$D/$LONG")" "long"
expect_eq "its hard link in another directory reads" "$(cat "$D/Quarterly-Reports/$LONG")" "long"
expect_eq "the symlink's target reads as written" "$(readlink "$D/shortcut-to-plan")" "../Documents/Quarterly-Reports/acquisition-plan.txt"
expect_eq "and its size is the target's length" "$(stat -c %s "$D/shortcut-to-plan")" "51"
expect_eq "and it resolves" "$(cat "$D/shortcut-to-plan")" "secret"
check "a long name renames" mv "$D/$LONG" "$D/${LONG%?}M"
expect_eq "under its new name" "$(cat "$D/${LONG%?}M")" "long"
check_error "and not its old one" "No such file" cat "$D/$LONG"
check "a 256-byte name is refused" sh -c "! echo x > '$D/${LONG}X' 2>/dev/null"
rm "$D/${LONG%?}M" "$D/Quarterly-Reports/$LONG"
expect_eq "removing long names leaves no side file" "$(find "$DEV/sandbox" -name '*.name' | wc -l)" "0"
check "tar round-trips the tree" sh -c "tar -C '$D' -cf '$WORK/t.tar' . && mkdir '$D/copy' && tar -C '$D/copy' -xf '$WORK/t.tar' && diff -r --no-dereference '$D/Quarterly-Reports' '$D/copy/Quarterly-Reports'"

# Names stay readable while locked, as on iOS; a name moved to another directory in the
# backing tree does not open there (it is bound to its directory).
"$DPFS" lock "$MNT" --now
expect_eq "names list while locked" "$(ls "$D/Quarterly-Reports")" "acquisition-plan.txt"
unlock_device
PLAN=$(backing "$D/Quarterly-Reports/acquisition-plan.txt")
mv "$PLAN" "$(backing "$D")/"
echo 2 > /proc/sys/vm/drop_caches
expect_eq "a backing entry moved to another directory is not listed there" "$(ls "$D" | grep -c acquisition)" "0"
"$DPFS" unmount "$MNT"
out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" 2>&1)
case "$out" in *"does not open"*) pass "fsck reports the moved name" ;; *) fail "fsck reports the moved name" "$out" ;; esac
mount_device
finish
