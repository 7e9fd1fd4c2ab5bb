#!/bin/bash
# As the official image, in short: a new data directory is initialised with
# POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB, the scripts of
# /docker-entrypoint-initdb.d/ run in name order on a server listening on the
# socket only, then postgres serves the network. Options alone go to postgres.
set -euo pipefail
case "${1:-}" in -*) set -- postgres "$@" ;; esac
user="${POSTGRES_USER:-postgres}"
database="${POSTGRES_DB:-$user}"
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
    initdb --username="$user" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --no-sync >/dev/null
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    pg_ctl --wait --silent --options="-c listen_addresses='' -c fsync=off" start
    psql=(psql --no-psqlrc --quiet -v ON_ERROR_STOP=1 --username "$user")
    if [ "$database" != postgres ]; then
        "${psql[@]}" --dbname postgres --set db="$database" <<<'CREATE DATABASE :"db";'
    fi
    for script in /docker-entrypoint-initdb.d/*; do
        case "$script" in
            *.sql) echo "running $script"; "${psql[@]}" --dbname "$database" -f "$script" ;;
            *.sh) echo "running $script"; bash "$script" ;;
            *) ;;
        esac
    done
    pg_ctl --wait --silent --mode=fast stop
    echo "PostgreSQL init process complete; ready for start up."
fi
if [ "${1:-}" = postgres ]; then
    shift
    exec postgres -c listen_addresses='*' "$@"
fi
exec "$@"
