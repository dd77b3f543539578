# A private PostgreSQL for the keychain sync scenarios and Scripts/bench-sync: initdb
# on a temporary directory, a port of its own on 127.0.0.1 and its socket in that
# directory. PostgreSQL refuses to run as root, so as root the server runs as the
# postgres user Debian's package makes. Sourced; pg_start sets PGURL, pg_stop and
# pg_restart act on the one server, pg_freeze and pg_thaw stop and continue its
# processes (SIGSTOP: a stalled server, its connections open), pg_remove (for a
# cleanup hook) continues and stops it and removes its directory.
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
PGWORK=""
PGPORT=""
PGURL=""

pg_as_server() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {
    [ -x "$PGBIN/initdb" ] || { echo "no PostgreSQL server binaries (Scripts/setup installs postgresql)" >&2; return 1; }
    PGWORK=$(mktemp -d "${TMPDIR:-/tmp}/dpfs-postgres.XXXXXX") || return 1
    chmod 755 "$PGWORK"
    [ "$(id -u)" = 0 ] && chown postgres: "$PGWORK"
    PGPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    pg_as_server "$PGBIN/initdb" -D "$PGWORK/data" -A trust -U dpfs --no-sync >"$PGWORK/initdb.log" 2>&1 || return 1
    pg_up || return 1
    pg_as_server "$PGBIN/createdb" -h "$PGWORK" -p "$PGPORT" -U dpfs sync || return 1
    PGURL="postgresql://dpfs@127.0.0.1:$PGPORT/sync"
}

pg_up() {
    pg_as_server "$PGBIN/pg_ctl" -D "$PGWORK/data" -l "$PGWORK/server.log" -w -t 60 \
        -o "-p $PGPORT -k $PGWORK -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
}

pg_stop() {
    pg_as_server "$PGBIN/pg_ctl" -D "$PGWORK/data" -m fast -w -t 60 stop >/dev/null
}

pg_restart() { pg_up; }

# The postmaster's pid (postmaster.pid's first line).
pg_postmaster() { head -1 "$PGWORK/data/postmaster.pid" 2>/dev/null; }

# Stops the server's processes, the postmaster first: stopped, it forks no more, so
# the children listed then are all there are.
pg_freeze() {
    local postmaster children
    postmaster=$(pg_postmaster)
    [ -n "$postmaster" ] && kill -STOP "$postmaster" || return 1
    children=$(pgrep -P "$postmaster")
    # shellcheck disable=SC2086  # one pid a word
    [ -z "$children" ] || kill -STOP $children
}

# Continues them (a running process ignores SIGCONT), the postmaster last.
pg_thaw() {
    local postmaster children
    postmaster=$(pg_postmaster)
    [ -n "$postmaster" ] || return 0
    children=$(pgrep -P "$postmaster")
    # shellcheck disable=SC2086
    [ -z "$children" ] || kill -CONT $children
    kill -CONT "$postmaster"
}

pg_psql() {
    "$PGBIN/psql" -h "$PGWORK" -p "$PGPORT" -U dpfs -d sync -X -q -A -t "$@"
}

pg_dump_all() {
    "$PGBIN/pg_dump" -h "$PGWORK" -p "$PGPORT" -U dpfs -d sync
}

pg_remove() {
    [ -n "$PGWORK" ] || return 0
    pg_thaw 2>/dev/null
    if [ -f "$PGWORK/data/postmaster.pid" ]; then pg_stop 2>/dev/null; fi
    rm -rf "$PGWORK"
    PGWORK=""
}
