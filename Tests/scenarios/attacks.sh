#!/usr/bin/env bash
# Issue 12: attacks on the backing files, each replayed exactly as it was found, each
# now getting nothing: EIO, EPERM or a report from fsck. (The control-plane, argv and
# passcode-file attacks are replayed in control.sh, keychain.sh and passcode.sh.)
source "$(dirname "$0")/lib.sh"

setup_device
unlock_device
D="$MNT/Documents"
SECRET_TEXT="the plaintext an attacker wants"
slots_in_use() {  # how many of a backing header's two key slots are not all zeros
    python3 -c "
import sys; h = open(sys.argv[1], 'rb').read(512)
print(sum(1 for s in (h[24:152], h[152:280]) if any(s)))" "$1"
}

# --- 1. A class change leaves no slot wrapped under the old class.
printf '%s' "$SECRET_TEXT" > "$D/was-none.txt"
setfattr -n user.dpfs.protection -v none "$D/was-none.txt"
setfattr -n user.dpfs.protection -v complete "$D/was-none.txt"
expect_eq "after none → complete one key slot is left" "$(slots_in_use "$(backing "$D/was-none.txt")")" "1"
expect_eq "the file reads back" "$(cat "$D/was-none.txt")" "$SECRET_TEXT"

# --- 2. Downgrade by flipping a header byte, while locked: a sweep of two values per
# byte over the first KiB of a complete file's header that was untilFirstAuth before.
{ printf '%s' "$SECRET_TEXT"; head -c 4000 /dev/zero | tr '\0' '.'; } > "$D/downgrade.txt"   # past 1 KiB
setfattr -n user.dpfs.protection -v untilFirstAuth "$D/downgrade.txt"
setfattr -n user.dpfs.protection -v complete "$D/downgrade.txt"
"$DPFS" lock "$MNT" --now
sweep=$(python3 - "$(backing "$D/downgrade.txt")" "$D/downgrade.txt" "$SECRET_TEXT" <<'PY'
import os, sys
backing, mounted, secret = sys.argv[1], sys.argv[2], sys.argv[3].encode()
original = open(backing, "rb").read()
leaks = tried = 0
for offset in range(min(1024, len(original))):
    for value in (original[offset] ^ 0x01, (original[offset] + 0x80) & 0xff):
        data = bytearray(original); data[offset] = value
        with open(backing, "r+b") as f: f.write(data)
        tried += 1
        try:
            with open(mounted, "rb") as f:
                if secret in f.read(): leaks += 1
        except OSError:
            pass
with open(backing, "r+b") as f: f.write(original)
print(tried, leaks)
PY
)
expect_eq "2,048 one-byte header edits while locked: no plaintext" "$sweep" "2048 0"
check_error "the restored complete file is still refused while locked" "Operation not permitted" cat "$D/downgrade.txt"
unlock_device
expect_eq "after unlock it reads back" "$(head -c ${#SECRET_TEXT} "$D/downgrade.txt")" "$SECRET_TEXT"
expect_eq "and is still complete" "$(getfattr --absolute-names --only-values -n user.dpfs.protection "$D/downgrade.txt")" "complete"

# --- 3. A directory's class cannot be lowered without its key, through the mount or
# by editing the backing directory's attribute.
mkdir "$D/vault"
setfattr -n user.dpfs.protection -v complete "$D/vault"
"$DPFS" restart "$MNT"
check_error "before first unlock: lowering a complete directory is refused" "Operation not permitted" \
    setfattr -n user.dpfs.protection -v none "$D/vault"
VAULT=$(backing "$D/vault")
setfattr -n user.dpfs.protection -v none "$VAULT"
unlock_device
check_error "a directory class edited in the backing tree reads as EIO" "Input/output error" \
    getfattr -n user.dpfs.protection "$D/vault"
check_error "no file is created under the forged class" "Input/output error" sh -c "echo x > '$D/vault/new.txt'"
expect_eq "nothing was created" "$(ls "$VAULT" | wc -l)" "0"
setfattr -x user.dpfs.protection "$VAULT"
check_error "a directory class removed in the backing tree reads as EIO" "Input/output error" \
    getfattr -n user.dpfs.protection "$D/vault"
check "unlocked, the directory's class can be set again" setfattr -n user.dpfs.protection -v complete "$D/vault"
check "and files are created in it" sh -c "echo x > '$D/vault/new.txt'"
expect_eq "in its class" "$(getfattr --absolute-names --only-values -n user.dpfs.protection "$D/vault/new.txt")" "complete"

# --- 8. Tampering that used to read back as data.
head -c 12288 /dev/urandom > "$WORK/three-blocks"
for name in cut swapped other zeroed empty headeronly; do cp "$WORK/three-blocks" "$D/$name.bin"; done
echo "another file" > "$D/other.bin"
: > "$D/really-empty.bin"
declare -A BK
for name in cut swapped other empty headeronly zeroed really-empty; do BK[$name]=$(backing "$D/$name.bin"); done
"$DPFS" unmount "$MNT"
size=$(stat -c %s "${BK[cut]}"); truncate -s $((size - 4136)) "${BK[cut]}"        # the last block cut off
cp "${BK[other]}" "${BK[swapped]}"                                               # another file's backing file
: > "${BK[empty]}"                                                               # cut to zero bytes
truncate -s 512 "${BK[headeronly]}"                                              # cut to its header
dd if=/dev/zero of="${BK[zeroed]}" bs=1 seek=$((512 + 4136)) count=4136 conv=notrunc status=none  # block 1 zeroed
truncate -s 552 "${BK[really-empty]}" && printf '\x01' | dd of="${BK[really-empty]}" bs=1 seek=530 conv=notrunc status=none
fsck_out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS"); fsck_rc=$?
mount_device
unlock_device
check_error "the last block cut off: EIO" "Input/output error" cat "$D/cut.bin"
check_error "a backing file cut to zero bytes: EIO" "Input/output error" cat "$D/empty.bin"
check_error "a backing file cut to its header: EIO" "Input/output error" cat "$D/headeronly.bin"
check_error "an empty file whose block was altered: EIO" "Input/output error" cat "$D/really-empty.bin"
expect_eq "a zeroed block reads as a hole (zeros), as documented in dpfs(5)" \
    "$(dd if="$D/zeroed.bin" bs=4096 skip=1 count=1 status=none | tr -d '\0' | wc -c)" "0"
expect_eq "fsck exits 1" "$fsck_rc" "1"
for name in cut empty headeronly really-empty; do
    case "$fsck_out" in *"Documents/$name.bin:"*) pass "fsck reports $name.bin" ;; *) fail "fsck reports $name.bin" "$fsck_out" ;; esac
done
finish
