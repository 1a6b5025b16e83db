#!/usr/bin/env bash
# A throwaway PostgreSQL for the service's storage tests.
#
#   eval "$(bash .ci/postgres.sh)"        # start one; prints `export TEST_DATABASE_URL=... TEST_PGDATA=...`
#   bash .ci/postgres.sh stop             # stop the one named by $TEST_PGDATA and remove its files
#
# When TEST_DATABASE_URL is already set it is printed back and nothing is started.  Otherwise the server
# binaries are found (initdb on PATH, else the newest /usr/lib/postgresql/*/bin; `apt-get install postgresql`
# when there are none), a cluster is created in a temporary folder (as the `postgres` user when run as root,
# since initdb refuses root), started on 127.0.0.1 on a free port with trust authentication and no fsync, and
# a database `template_engine` is created.  Only the export lines go to stdout; progress goes to stderr.
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

find_bin() {
  local found
  found="$(command -v initdb 2>/dev/null || true)"
  if [ -n "$found" ]; then
    dirname "$(readlink -f "$found")"
    return
  fi
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  [ -n "$found" ] && [ -x "$found/initdb" ] && echo "$found"
}

if [ "${1:-start}" = stop ]; then
  data="${2:-${TEST_PGDATA:-}}"
  [ -n "$data" ] || { log "stop: no TEST_PGDATA"; exit 0; }
  bin="$(find_bin || true)"
  if [ -n "$bin" ] && [ -f "$data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$data" -m immediate -w stop >&2 || true
  fi
  rm -rf "$(dirname "$data")"
  exit 0
fi

if [ -n "${TEST_DATABASE_URL:-}" ]; then
  echo "export TEST_DATABASE_URL='${TEST_DATABASE_URL}'"
  exit 0
fi

bin="$(find_bin || true)"
if [ -z "$bin" ]; then
  log "no PostgreSQL server binaries: installing the postgresql package"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -q postgresql || { apt-get update -q && apt-get install -y -q postgresql; }; } >&2
  bin="$(find_bin || true)"
  [ -n "$bin" ] || { log "cannot find initdb after installing postgresql"; exit 1; }
fi

if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin postgres
fi

base="$(mktemp -d /tmp/template-engine-pg.XXXXXX)"
data="$base/data"
chmod 755 "$base"
[ "$(id -u)" = 0 ] && chown postgres "$base"

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
as_owner "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --no-sync >"$base/initdb.log" 2>&1 \
  || { cat "$base/initdb.log" >&2; exit 1; }
options="-c listen_addresses=127.0.0.1 -p $port -k $base -c fsync=off -c synchronous_commit=off"
options="$options -c full_page_writes=off -c max_connections=200"
as_owner "$bin/pg_ctl" -D "$data" -o "$options" -l "$base/server.log" -w -t 60 start >&2 \
  || { cat "$base/server.log" >&2; exit 1; }
"$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres template_engine >&2
log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($data)"

echo "export TEST_DATABASE_URL='postgresql+psycopg://postgres@127.0.0.1:$port/template_engine'"
echo "export TEST_PGDATA='$data'"
