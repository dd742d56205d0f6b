# Shared by the scripts: where cargo builds, and installing what a step needs when it is missing.
# Nothing here downloads anything but packages from crates.io, npm and Debian.

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/inmanta/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf '\n==> %s\n' "$*" >&2; }

# Prints the URL of a server started in the background with `--bind-port 0` (process PID, its
# stdout and stderr in STATE/stdout and STATE/stderr) once it says it listens. Fails with the
# server's stderr when it has exited or has not said so within SECONDS.
wait_for_server_url() {
  local state=$1 pid=$2 seconds=$3 url=""
  for _ in $(seq 1 $((seconds * 5))); do
    url=$(sed -n 's/^Inmanta server listening on \(http[^ ]*\).*/\1/p' "$state/stdout")
    [ -n "$url" ] && { echo "$url"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  cat "$state/stderr" >&2
  echo "the server did not start" >&2
  return 1
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root to run: $*" >&2; return 1; fi
}

apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq >/dev/null; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}


# The wasm target of the installed toolchain (rustup), for the console's wasm build.
ensure_wasm_target() {
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    log "installing the wasm32-unknown-unknown target (rustup)"
    rustup target add wasm32-unknown-unknown
  fi
}

# wasm-bindgen-cli at exactly the version of the wasm-bindgen crate in Cargo.lock (they must be
# equal). From crates.io; NOT with --locked (its lock file holds a yanked webpki-roots).
wasm_bindgen_version() {
  grep -A1 '^name = "wasm-bindgen"$' "$ROOT/Cargo.lock" | sed -n 's/^version = "\(.*\)"/\1/p'
}
ensure_wasm_bindgen() {
  local want have
  want=$(wasm_bindgen_version)
  have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
  if [ "$want" != "$have" ]; then
    log "installing wasm-bindgen-cli $want (found: ${have:-none}; takes a few minutes)"
    # Its own target dir: the shared one is locked by every other build, which starves an install.
    # --debug: unoptimised, it builds in a fraction of the CPU time (it competes with the console's
    # and the server's builds on a cold machine) and still binds the console's wasm in seconds.
    CARGO_TARGET_DIR="$CARGO_TARGET_DIR/tools" cargo install wasm-bindgen-cli --version "$want" --force --debug
  fi
}

# OpenSSH server and client from Debian for the agent's ssh tests (they start their own sshd on a
# loopback port; the system service is never started or configured).
# The ssh2 crate (SSH transport of the agent) builds libssh2 against the system OpenSSL.
ensure_build_deps() {
  if ! pkg-config --exists openssl 2>/dev/null; then
    log "installing build dependencies (Debian packages libssl-dev, pkg-config)"
    apt_install libssl-dev pkg-config
  fi
}

ensure_sshd() {
  if [ ! -x /usr/sbin/sshd ] || ! command -v ssh-keygen >/dev/null; then
    log "installing OpenSSH (Debian packages openssh-server, openssh-client)"
    apt_install openssh-server openssh-client
  fi
}

# age (Debian package) for the reference tests: a module's own reference class decrypts with it.
ensure_age() {
  if ! command -v age >/dev/null || ! command -v age-keygen >/dev/null; then
    log "installing age (Debian package age)"
    apt_install age
  fi
}

# libfaketime (Debian package) for the fault-injection test: its clock jumps step the server's
# wall clock through an offset file the preloaded library reads (server/tests/server/chaos.rs).
ensure_faketime() {
  if [ ! -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ]; then
    log "installing libfaketime (Debian package libfaketime)"
    apt_install libfaketime
  fi
}

# Neovim from Debian: lsp/tests/neovim.rs drives `inmanta lsp` with its built-in LSP client.
ensure_neovim() {
  if [ ! -x /usr/bin/nvim ]; then
    log "installing Neovim (Debian package neovim)"
    apt_install neovim
  fi
}

# Chromium (and its driver, for wasm-bindgen-test-runner) from Debian for the browser tests.
# Playwright's own browser download is never used.
ensure_chromium() {
  if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    log "installing Chromium (Debian packages chromium, chromium-driver)"
    apt_install chromium chromium-driver
  fi
}

# end2end/node_modules from the committed package-lock.json (npm ci), without browser downloads.
ensure_node_modules() {
  if ! command -v npm >/dev/null; then log "installing Node.js and npm (Debian)"; apt_install nodejs npm; fi
  local dir="$ROOT/end2end"
  if [ ! -d "$dir/node_modules/playwright-core" ] || [ ! -d "$dir/node_modules/oidc-provider" ] \
    || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    log "installing the browser test dependencies (npm ci in end2end/)"
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# GraphiQL's browser bundle and React's UMD builds for /console/graphiql (frontend/graphiql,
# pinned by its package-lock.json); scripts/build-console.sh copies them into the console's site.
ensure_graphiql() {
  if ! command -v npm >/dev/null; then log "installing Node.js and npm (Debian)"; apt_install nodejs npm; fi
  local dir="$ROOT/frontend/graphiql"
  if [ ! -f "$dir/node_modules/graphiql/graphiql.min.js" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    log "installing GraphiQL (npm ci in frontend/graphiql/)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# wasm-opt from npm binaryen (pinned in frontend/package.json, npm ci from its lock), for the
# console's release build. Never Debian's binaryen: its wasm-opt (108) breaks hydration.
ensure_binaryen() {
  if ! command -v npm >/dev/null; then log "installing Node.js and npm (Debian)"; apt_install nodejs npm; fi
  local dir="$ROOT/frontend"
  if [ ! -x "$dir/node_modules/.bin/wasm-opt" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    log "installing wasm-opt (npm binaryen, npm ci in frontend/)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# workspace_test_binaries CRATE_DIR...: `DIR:EXECUTABLE` of every test binary that
# `cargo test --workspace --no-run` builds for the workspace members in those folders (already
# built: this only asks cargo where they are). Each runs from its crate's folder, as cargo runs it.
# schemathesis from PyPI in a cached venv; prints the venv. Two runs side by side must not both
# install it: the CI calls this once before starting them.
ensure_schemathesis() {
  local venv="$HOME/.cache/inmanta/schemathesis-venv"
  if ! "$venv/bin/schemathesis" --version >/dev/null 2>&1; then
    log "installing schemathesis into $venv"
    python3 -m venv --help >/dev/null 2>&1 || apt_install python3-venv
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==4.32.5" >&2
  fi
  echo "$venv"
}

workspace_test_binaries() {
  cargo test --workspace --no-run --message-format=json 2>/dev/null | python3 -c '
import json, os, sys
wanted = set(sys.argv[1:])
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if message.get("reason") != "compiler-artifact" or not message.get("executable"):
        continue
    if not message.get("profile", {}).get("test"):
        continue
    folder = os.path.dirname(message["manifest_path"])
    if os.path.basename(folder) in wanted:
        print(folder + ":" + message["executable"])
' "$@"
}
