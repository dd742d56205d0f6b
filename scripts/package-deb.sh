#!/usr/bin/env bash
# Builds the Debian package of the orchestrator with dpkg-deb (no network, no cargo-deb):
# /usr/bin/inmanta (console embedded), systemd units for the server and a remote agent,
# /etc/inmanta/inmanta.cfg with every option commented (`inmanta config-template`), the service
# user `inmanta` (postinst), state under /var/lib/inmanta, logs to the journal.
#
#   scripts/package-deb.sh [--binary PATH] [--revision N] [--out DIR] [--compression xz|none]
#
# Without --binary it builds the console and the server with the `dist` profile (fat LTO, one
# codegen unit: the small binary; slow to link). --binary packages an existing build instead
# (the package test uses the debug build). The package version is the workspace's version
# (CHANGELOG.md) with the Debian revision N (default 1). Prints the path of the .deb.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

binary="" revision=1 out="$CARGO_TARGET_DIR/deb" compression=xz
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift ;;
    --revision) revision="$2"; shift ;;
    --out) out="$2"; shift ;;
    --compression) compression="$2"; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
command -v dpkg-deb >/dev/null || apt_install dpkg

if [ -z "$binary" ]; then
  log "building the console and the server (dist profile)"
  scripts/build-release.sh --profile dist
  binary="$CARGO_TARGET_DIR/dist/inmanta"
fi
[ -x "$binary" ] || { echo "no executable at $binary" >&2; exit 2; }

version=$("$binary" --version | awk '{print $2}')
want=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
[ "$version" = "$want" ] || { echo "$binary reports $version, the workspace is $want" >&2; exit 2; }
arch=$(dpkg --print-architecture)
name="inmanta_${version}-${revision}_${arch}"
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
pkg=packaging/debian

install -D -m 0755 "$binary" "$tree/usr/bin/inmanta"
install -D -m 0644 "$pkg/inmanta-server.service" "$tree/lib/systemd/system/inmanta-server.service"
install -D -m 0644 "$pkg/inmanta-agent.service" "$tree/lib/systemd/system/inmanta-agent.service"
install -d "$tree/etc/inmanta"
"$binary" config-template > "$tree/etc/inmanta/inmanta.cfg"
chmod 0644 "$tree/etc/inmanta/inmanta.cfg"
install -m 0640 "$pkg/agent.env" "$tree/etc/inmanta/agent.env"
install -D -m 0644 docs/operations.md "$tree/usr/share/doc/inmanta/operations.md"
install -m 0644 CHANGELOG.md "$tree/usr/share/doc/inmanta/CHANGELOG.md"
install -d "$tree/DEBIAN"
install -m 0755 "$pkg/postinst" "$pkg/prerm" "$pkg/postrm" "$tree/DEBIAN/"
printf '/etc/inmanta/inmanta.cfg\n/etc/inmanta/agent.env\n' > "$tree/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$tree" | cut -f1)
cat > "$tree/DEBIAN/control" <<CONTROL
Package: inmanta
Version: ${version}-${revision}
Architecture: ${arch}
Maintainer: Inmanta (Rust) maintainers <maintainers@example.invalid>
Installed-Size: ${size}
Depends: libc6, passwd
Recommends: python3
Suggests: postgresql
Section: admin
Priority: optional
Homepage: https://docs.inmanta.com
Description: Infrastructure orchestrator compatible with Inmanta
 The inmanta server (REST API, web console, scheduler and agents) and the
 inmanta command line, with systemd units for the server and a remote agent.
CONTROL
mkdir -p "$out"
dpkg-deb --root-owner-group -Z"$compression" --build "$tree" "$out/$name.deb" >&2
echo "$out/$name.deb"
