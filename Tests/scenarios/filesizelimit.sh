#!/usr/bin/env bash
# A daemon started under a file-size limit (`ulimit -f` in the shell that mounts): a
# write that takes a backing file past it fails with EFBIG ("File too large") and the
# daemon serves on; before, SIGXFSZ ended it and left the mount dead.
source "$(dirname "$0")/lib.sh"

"$DPFS" init "$DEV" --passcode-file "$PASS" --secret-store "file:$SECRETS" >/dev/null || { fail "init"; finish; }
# 1024-byte blocks: 800 KiB for every file the daemon writes.
( ulimit -f 800 && mount_device ) || { fail "mount under ulimit -f"; finish; }
unlock_device
D="$MNT/Documents"
PID=$(daemon_pid)

head -c 500000 /dev/urandom > "$WORK/small"
head -c 1200000 /dev/urandom > "$WORK/large"
check "a file within the limit is written" cp "$WORK/small" "$D/small.bin"
error=$(cp "$WORK/large" "$D/large.bin" 2>&1)
check "one past it fails" test -n "$error"
check "with EFBIG" grep -q "File too large" <<< "$error"
check "the daemon serves on" kill -0 "$PID"
check "the mount answers" "$DPFS" status "$MNT"
check "the file within the limit reads back" cmp "$WORK/small" "$D/small.bin"
check "a new file within the limit is written" cp "$WORK/small" "$D/again.bin"
check "and reads back" cmp "$WORK/small" "$D/again.bin"
"$DPFS" unmount "$MNT"
check "fsck finds nothing torn" "$DPFS" fsck "$DEV" --passcode-file "$PASS"
finish
