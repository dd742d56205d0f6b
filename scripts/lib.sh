# Shared by the scripts: where cargo builds, and installing what a step needs when it is missing.
# Nothing here downloads anything but packages from crates.io, npm and Debian.

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/inmanta/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf '\n==> %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root to run: $*" >&2; return 1; fi
}

apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq >/dev/null; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

ensure_chromium() {
  if [ ! -x /usr/bin/chromium ]; then log "installing Chromium (Debian package)"; apt_install chromium; fi
}
