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
truncate -s 552 "${BK[really-empty]}" && flip_bit "${BK[really-empty]}" 530
fsck_out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS"); fsck_rc=$?
mount_device
unlock_device
check_error "the last block cut off: EIO" "Input/output error" cat "$D/cut.bin"
check_error "an append to it fails too, so as not to hide the cut" "I/O error" \
    sh -c "echo more >> '$D/cut.bin'"
check_error "and it still reads as EIO" "Input/output error" cat "$D/cut.bin"
check_error "a backing file cut to zero bytes: EIO" "Input/output error" cat "$D/empty.bin"
check_error "a backing file cut to its header: EIO" "Input/output error" cat "$D/headeronly.bin"
check_error "an empty file whose block was altered: EIO" "Input/output error" cat "$D/really-empty.bin"
expect_eq "a zeroed block reads as a hole (zeros), as documented in dpfs(5)" \
    "$(dd if="$D/zeroed.bin" bs=4096 skip=1 count=1 status=none | tr -d '\0' | wc -c)" "0"
expect_eq "fsck exits 1" "$fsck_rc" "1"
for name in cut empty headeronly really-empty; do
    case "$fsck_out" in *"Documents/$name.bin:"*) pass "fsck reports $name.bin" ;; *) fail "fsck reports $name.bin" "$fsck_out" ;; esac
done
# --- 8, continued. Whole nodes moved in the backing tree onto another's name: each
# name is tagged on its node under the metadata key (dpfs(5), "Name tags").
for n in alpha beta gamma delta eps zeta eta gone; do printf '%s' "$n's text" > "$D/$n.txt"; done
mkdir "$D/dirA" "$D/dirB"; echo "in A" > "$D/dirA/f"; echo "in B" > "$D/dirB/f"
declare -A BN
for n in alpha.txt beta.txt gamma.txt delta.txt eps.txt zeta.txt eta.txt gone.txt dirA dirB; do BN[$n]=$(backing "$D/$n"); done
rm "$D/gone.txt"                                                 # its backing name is free now
"$DPFS" unmount "$MNT"
mv "${BN[alpha.txt]}" "${BN[beta.txt]}"                          # a whole node, attributes and all
cp --preserve=all "${BN[gamma.txt]}" "${BN[delta.txt]}"          # content and attributes copied over
mv "${BN[eps.txt]}" "${BN[gone.txt]}"                            # onto a name no node has now
eta_tags=$(getfattr --absolute-names --only-values -e hex -n user.dpfs.names "${BN[eta.txt]}")
mv "${BN[zeta.txt]}" "${BN[eta.txt]}"                            # with the victim's own tags put on it
setfattr -n user.dpfs.names -v "$eta_tags" "${BN[eta.txt]}"
mv "${BN[dirA]}" "${BN[dirA]}.x" && mv "${BN[dirB]}" "${BN[dirA]}" && mv "${BN[dirA]}.x" "${BN[dirB]}"  # two directories swapped
fsck_out=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" 2>&1)
mount_device
unlock_device
check_error "a file moved onto another's name: EIO" "Input/output error" cat "$D/beta.txt"
check_error "a file copied with its attributes onto another's name: EIO" "Input/output error" cat "$D/delta.txt"
check_error "a file moved onto a free name: EIO" "Input/output error" cat "$D/gone.txt"
check_error "a file moved onto another's name with the victim's tags: EIO" "Input/output error" cat "$D/eta.txt"
check_error "two directories swapped: listing one is EIO" "Input/output error" ls "$D/dirA"
check_error "and a name inside it is EIO" "Input/output error" cat "$D/dirB/f"
for n in beta.txt delta.txt gone.txt eta.txt dirA dirB; do
    case "$fsck_out" in *"Documents/$n: its name tags"*) pass "fsck reports $n" ;; *) fail "fsck reports $n" "$fsck_out" ;; esac
done

# Names made, moved and removed through the mount keep their tags right: every name
# still opens after a remount, and fsck finds nothing to report about them.
mkdir -p "$D/kept/sub"
for n in a b c d e; do printf '%s' "$n" > "$D/kept/$n"; done
mv "$D/kept/a" "$D/kept/a2"                                      # renamed in place
mv "$D/kept/b" "$D/kept/sub/b"                                   # moved to another directory
ln "$D/kept/c" "$D/kept/sub/c-link" && ln "$D/kept/c" "$D/kept/c-link2" && rm "$D/kept/c"   # links outlive the first name
ln "$D/kept/d" "$D/kept/d-link" && mv "$D/kept/e" "$D/kept/d"    # a linked file replaced by a rename
python3 -c "
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0: sys.exit(os.strerror(ctypes.get_errno()))
" "$D/kept/a2" "$D/kept/sub/b"                                    # RENAME_EXCHANGE
mv "$D/kept/sub" "$D/kept/moved-sub"                             # a directory renamed
chmod 444 "$D/kept/d-link" && mv "$D/kept/d-link" "$D/kept/d-ro" # a read-only file renamed
"$DPFS" unmount "$MNT"
fsck_kept=$("$DPFS" fsck "$DEV" --passcode-file "$PASS" 2>&1 | grep "kept" || true)
expect_eq "fsck reports nothing about names made through the mount" "$fsck_kept" ""
mount_device
unlock_device
expect_eq "after a remount every name opens with its own contents" \
    "$(cd "$D/kept" && for f in a2 moved-sub/b moved-sub/c-link c-link2 d d-ro; do printf '%s=%s ' "$f" "$(cat "$f")"; done)" \
    "a2=b moved-sub/b=a moved-sub/c-link=c c-link2=c d=e d-ro=d "
expect_eq "the directory whose damaged class record was set again (3.) opens after a remount" "$(cat "$D/vault/new.txt")" "x"
finish
