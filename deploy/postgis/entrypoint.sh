#!/bin/bash
# First start (empty PGDATA): initdb with password authentication for TCP,
# then, on a temporary server listening only on its Unix socket, create
# POSTGRES_DB and the postgis extension (in it and in template1, so that
# every new database has it). Then run the server on every address.
# Runs as the postgres user.
set -euo pipefail
: "${PGDATA:=/var/lib/postgresql/data}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ "${1:-postgres}" != postgres ]; then exec "$@"; fi
shift || true
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "${POSTGRES_HOST_AUTH_METHOD:-}" != trust ]; then
    echo "entrypoint: set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust)" >&2; exit 1
  fi
  mkdir -p "$PGDATA"; chmod 700 "$PGDATA"
  pwfile=$(mktemp); printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
  initdb -D "$PGDATA" --username="$user" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >/tmp/initdb.log 2>&1 ||
    { cat /tmp/initdb.log >&2; exit 1; }
  rm -f "$pwfile"
  echo "host all all all ${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w -l /tmp/init-server.log start >/dev/null ||
    { cat /tmp/init-server.log >&2; exit 1; }
  psql=(psql -v ON_ERROR_STOP=1 -X -q --username "$user" --no-password)
  if [ "$db" != postgres ]; then "${psql[@]}" -d postgres -c "CREATE DATABASE \"$db\""; fi
  for d in template1 "$db"; do "${psql[@]}" -d "$d" -c 'CREATE EXTENSION IF NOT EXISTS postgis'; done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "entrypoint: initialised $PGDATA: user $user, database $db, postgis $(ls /usr/share/postgresql/15/extension/postgis--*.sql | sed -n 's/.*postgis--\([0-9.]*\)\.sql$/\1/p' | sort -V | tail -n1)"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
