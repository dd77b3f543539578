#!/usr/bin/env bash
# fsx through the mount (Tests/fsx/fsx.py): seeded random writes, truncates, reads,
# mmap writes, fallocate, O_APPEND, reopens and remounts on one file, compared with a
# reference file on the plain disk after every step. One seed per protection class
# (untilFirstAuth, complete, none; complete survives the remounts because each one
# unlocks). A failure prints the seed and the op log; replay it with
#   FSX_SEEDS=N FSX_OPS=M bash Tests/scenarios/fsx.sh
# Scripts/fsx-long runs many more seeds and operations.
source "$(dirname "$0")/lib.sh"

SEEDS=${FSX_SEEDS:-"101 202 303"}
OPS=${FSX_OPS:-400}
EVERY=${FSX_REMOUNT_EVERY:-100}
FSX="$(cd "$(dirname "$0")/../fsx" && pwd)/fsx.py"

setup_device
unlock_device >/dev/null || { fail "unlock"; finish; }

# What fsx runs to remount: unmount, mount (a boot) and unlock.
cat > "$WORK/remount" <<EOF
#!/usr/bin/env bash
"$DPFS" unmount "$MNT" && "$DPFS" mount "$DEV" "$MNT" >/dev/null && "$DPFS" unlock "$MNT" --passcode-file "$PASS" >/dev/null
EOF
chmod +x "$WORK/remount"

classes=(untilFirstAuth complete none)
i=0
for seed in $SEEDS; do
    class=${classes[$((i % 3))]}
    i=$((i + 1))
    file="$MNT/Documents/fsx-$seed"
    : > "$file" && setfattr -n user.dpfs.protection -v "$class" "$file" || { fail "create the $class file for seed $seed"; continue; }
    start=$EPOCHREALTIME
    if out=$(python3 "$FSX" --file "$file" --ref "$WORK/ref-$seed" --seed "$seed" --ops "$OPS" \
                 --remount-every "$EVERY" --remount "$WORK/remount" 2>&1); then
        pass "fsx seed $seed, $OPS ops, class $class ($(printf '%.1f' "$(echo "$EPOCHREALTIME - $start" | bc)") s): ${out#fsx: }"
    else
        fail "fsx seed $seed, $OPS ops, class $class" "$out
     replay: FSX_SEEDS=$seed FSX_OPS=$OPS FSX_REMOUNT_EVERY=$EVERY DPFS=$DPFS bash $0"
    fi
    expect_eq "seed $seed: the file kept its class $class" \
        "$(getfattr --only-values -n user.dpfs.protection "$file" 2>/dev/null)" "$class"
    rm -f "$file" "$WORK/ref-$seed"
done
finish
