# A software TPM (swtpm) for the scenarios of the tpm2 secret store: on two free
# loopback ports in a row (N for the TPM, N+1 for its control channel), started by
# the scenario and stopped by its pid, even on failure. Sourced after lib.sh; sets
# TCTI; start_swtpm STATEDIR starts one, stop_swtpm stops it (the cleanup hook does).
SWTPM_PID=""
stop_swtpm() {
    if [ -n "$SWTPM_PID" ]; then kill -CONT "$SWTPM_PID" 2>/dev/null; kill "$SWTPM_PID" 2>/dev/null; wait "$SWTPM_PID" 2>/dev/null; SWTPM_PID=""; fi
}
scenario_cleanup() { stop_swtpm; }

require_tools swtpm
PORT=$(python3 - <<'PY'
import random, socket
for _ in range(200):
    port = random.randint(20000, 60000)
    try:
        for p in (port, port + 1):
            s = socket.socket(); s.bind(("127.0.0.1", p)); s.close()
        print(port); break
    except OSError:
        continue
PY
)
TCTI="swtpm:host=127.0.0.1,port=$PORT"

start_swtpm() {  # start_swtpm STATEDIR
    mkdir -p "$1"
    swtpm socket --tpm2 --server type=tcp,port="$PORT",bindaddr=127.0.0.1 \
        --ctrl type=tcp,port=$((PORT + 1)),bindaddr=127.0.0.1 \
        --flags not-need-init,startup-clear --tpmstate dir="$1" >"$WORK/swtpm.log" 2>&1 &
    SWTPM_PID=$!
    within 30 python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" \
        || { fail "swtpm starts" "$(cat "$WORK/swtpm.log")"; finish; }
}
