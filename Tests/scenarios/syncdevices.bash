# Shared by the keychain sync scenarios: devices a, b, … named in $DEVICES, each
# mounted on $WORK/mnt-NAME, and the calls the scenarios make on them.

mnt() { printf '%s' "$WORK/mnt-$1"; }

# Makes, mounts and unlocks every device, or ends the scenario failed.
setup_devices() {
    local d
    for d in $DEVICES; do
        mkdir -p "$(mnt "$d")"
        "$DPFS" init "$WORK/dev-$d" --passcode-file "$PASS" --secret-store "file:$SECRETS" >/dev/null \
            && "$DPFS" mount "$WORK/dev-$d" "$(mnt "$d")" >/dev/null \
            && "$DPFS" unlock "$(mnt "$d")" --passcode-file "$PASS" >/dev/null || { fail "device $d"; finish; }
    done
}

# A scenario's cleanup unless it defines its own: the devices, then the server.
scenario_cleanup() {
    unmount_devices
    pg_remove
    return 0
}

# Unmounts every device still mounted (a scenario's cleanup).
unmount_devices() {
    local d
    for d in $DEVICES; do
        if grep -qs " $(mnt "$d") fuse" /proc/mounts; then
            "$DPFS" unmount "$(mnt "$d")" >/dev/null 2>&1 || umount -l "$(mnt "$d")" 2>/dev/null
        fi
    done
}

# value DEVICE SERVICE: the item's data on DEVICE (synchronizable or not), or nothing.
value() { "$DPFS" keychain find "$(mnt "$1")" --service "$2" --synchronizable any 2>/dev/null; }
has_value() { [ "$(value "$1" "$2")" = "$3" ]; }

update() { printf '%s' "$3" | "$DPFS" keychain update "$(mnt "$1")" --service "$2" --synchronizable yes --new-data-file -; }
connection() { "$DPFS" sync status "$(mnt "$1")" --json | json_field connection; }
connection_is() { [ "$(connection "$1")" = "$2" ]; }

# add DEVICE SERVICE DATA [OPTION…]: a synchronizable AfterFirstUnlock item.
add() {
    printf '%s' "$3" | "$DPFS" keychain add "$(mnt "$1")" --service "$2" --account user --synchronizable yes \
        --accessible AfterFirstUnlock --data-file - "${@:4}"
}
