# Sourced by test.sh: provides ensure_postgres (sets POSTGRES_ADMIN_URL) and stop_postgres.

throwaway_pg=""

ensure_postgres() {
  if command -v psql >/dev/null && psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
    POSTGRES_ADMIN_URL="postgres://postgres@127.0.0.1:5432/postgres"
    return
  fi
  log "no PostgreSQL on 127.0.0.1:5432: starting a throwaway cluster"
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then apt_install postgresql; fi
  local bin port=54329
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  throwaway_pg=$(mktemp -d)
  local run=()
  if [ "$(id -u)" = 0 ]; then chown postgres "$throwaway_pg"; run=(runuser -u postgres --); fi
  "${run[@]}" "$bin/initdb" -D "$throwaway_pg/data" -A trust -U postgres >/dev/null
  "${run[@]}" "$bin/pg_ctl" -D "$throwaway_pg/data" -l "$throwaway_pg/log" -w \
    -o "-p $port -k $throwaway_pg -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
  POSTGRES_ADMIN_URL="postgres://postgres@127.0.0.1:$port/postgres"
}

stop_postgres() {
  if [ -n "$throwaway_pg" ]; then
    local bin run=()
    bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    [ "$(id -u)" = 0 ] && run=(runuser -u postgres --)
    "${run[@]}" "$bin/pg_ctl" -D "$throwaway_pg/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$throwaway_pg"
    throwaway_pg=""
  fi
}
