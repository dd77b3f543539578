#!/usr/bin/env bash
# Mounted with -o allow_other, other users see the ownership, permissions
# and errno of a local filesystem; a new file belongs to its creator, also when
# several users create at once.
source "$(dirname "$0")/lib.sh"

MOUNT_ARGS="-o allow_other" setup_device
unlock_device
S="$MNT/Documents/shared"
mkdir "$S" && chmod 1777 "$S"
chmod 755 "$WORK" "$MNT"
as() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }
expect_eq "a mount other users reach has the kernel check permissions" \
    "$(findmnt -no OPTIONS "$MNT" | tr , '\n' | grep -cx default_permissions)" "1"

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

# A write or truncation takes set-ID bits and file capabilities away as on a local
# filesystem (dpfs does it itself: the kernel asks no security.capability per write).
privileged() {  # name: a group-writable setuid+setgid executable owned by 1001
    printf 'x' > "$1" && chown 1001:1003 "$1" && chmod 6775 "$1"
}
privileged "$S/p1"
check "uid 1003 (the group) writes to a setuid file" as 1003 sh -c "echo more >> '$S/p1'"
expect_eq "the write by another user took both set-ID bits" "$(stat -c %a "$S/p1")" "775"
privileged "$S/p2"
check "root writes to a setuid file" sh -c "echo more >> '$S/p2'"
expect_eq "a write by root keeps them" "$(stat -c %a "$S/p2")" "6775"
check "then uid 1003 writes to it" as 1003 sh -c "echo again >> '$S/p2'"
expect_eq "which takes them" "$(stat -c %a "$S/p2")" "775"
privileged "$S/p3"
check "uid 1003 truncates a setuid file" as 1003 truncate -s 0 "$S/p3"
expect_eq "truncation took them" "$(stat -c %a "$S/p3")" "775"
privileged "$S/p5"
check "uid 1003 preallocates in a setuid file" as 1003 fallocate -l 8192 "$S/p5"
expect_eq "fallocate took them, as on ext4" "$(stat -c %a "$S/p5")" "775"
privileged "$S/p4"
exec 7>>"$S/p4"
check "root holds the file open for writing, then sets setuid again" chmod 6775 "$S/p4"
check "uid 1003 writes through its own descriptor" as 1003 sh -c "echo x >> '$S/p4'"
expect_eq "the bits set while open are taken too" "$(stat -c %a "$S/p4")" "775"
exec 7>&-
printf 'x' > "$S/c1"
check "a file capability can be set" setcap cap_net_raw+ep "$S/c1"
expect_eq "and read back" "$(getcap "$S/c1" | grep -c cap_net_raw)" "1"
check "a write by root" sh -c "echo more >> '$S/c1'"
expect_eq "takes the capability, as on ext4" "$(getcap "$S/c1")" ""

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
