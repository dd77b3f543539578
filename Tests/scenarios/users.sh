#!/usr/bin/env bash
# SPEC §6: mounted with -o allow_other, other users see the ownership, permissions
# and errno of a local filesystem; a new file belongs to its creator, also when
# several users create at once.
source "$(dirname "$0")/lib.sh"

MOUNT_ARGS="-o allow_other" setup_device
unlock_device
S="$MNT/Documents/shared"
mkdir "$S" && chmod 1777 "$S"
chmod 755 "$WORK" "$MNT"
as() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }

check "uid 1001 creates a file" as 1001 sh -c "echo mine > '$S/a'"
expect_eq "it belongs to 1001:1001" "$(stat -c %u:%g "$S/a")" "1001:1001"
check "uid 1002 makes a directory" as 1002 mkdir "$S/d"
expect_eq "it belongs to 1002:1002" "$(stat -c %u:%g "$S/d")" "1002:1002"
check "uid 1001 makes a symlink" as 1001 ln -s a "$S/l"
expect_eq "the link belongs to 1001" "$(stat -c %u "$S/l")" "1001"
as 1001 chmod 600 "$S/a"
check_error "another user cannot read a 0600 file" "Permission denied" as 1002 cat "$S/a"
check_error "nor delete it from a sticky directory" "Operation not permitted" as 1002 rm -f "$S/a"
check "its owner can" as 1001 cat "$S/a"
check_error "a user cannot chown to another" "Operation not permitted" as 1001 chown 1002 "$S/a"
check "root can chown" chown 1002:1002 "$S/a"
expect_eq "chown took effect" "$(stat -c %u:%g "$S/a")" "1002:1002"

# Many users at once.
for uid in 1011 1012 1013 1014; do
    as "$uid" sh -c "for i in \$(seq 1 40); do echo \$i > '$S/u$uid-'\$i; done" &
done
wait
wrong=0
for uid in 1011 1012 1013 1014; do
    for f in "$S"/u$uid-*; do [ "$(stat -c %u "$f")" = "$uid" ] || wrong=$((wrong + 1)); done
done
expect_eq "160 files made concurrently by 4 users each belong to their creator" "$wrong" "0"
expect_eq "all 160 are there" "$(ls "$S" | grep -c '^u10')" "160"
finish
