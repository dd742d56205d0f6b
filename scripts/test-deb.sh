#!/usr/bin/env bash
# The Debian package's life, without systemd (CI has none): builds the package twice (revisions
# 1 and 2 of this version; revision 1 around an older build of the binary when --old-binary
# names one, e.g. the debug build scripts/test.sh made before the release one), installs
# revision 1 into an empty directory tree
# with dpkg (--root, maintainer scripts run chrootless with DPKG_ROOT), runs the server unit's
# ExecStart as the service user against SQLite under the tree's /var/lib/inmanta, logs in with the
# generated admin password, upgrades to revision 2 with the state kept, removes the package (state
# kept) and purges it (state gone). The service user `inmanta` is created on this machine.
#
#   scripts/test-deb.sh [--binary PATH] [--old-binary PATH]
#                                   (default: the release build of scripts/test.sh, for both)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

binary="$CARGO_TARGET_DIR/release/inmanta"
old_binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift ;;
    --old-binary) old_binary="$2"; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
old_binary="${old_binary:-$binary}"
for b in "$binary" "$old_binary"; do
  [ -x "$b" ] || { echo "no inmanta binary at $b (build it, or pass --binary PATH)" >&2; exit 2; }
done
for tool in dpkg dpkg-deb setpriv curl useradd; do
  command -v "$tool" >/dev/null || { echo "missing $tool (Debian packages dpkg, util-linux, curl, passwd)" >&2; exit 2; }
done

work=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
chmod 0755 "$work"
first=$(scripts/package-deb.sh --binary "$old_binary" --revision 1 --out "$work/debs" --compression none)
second=$(scripts/package-deb.sh --binary "$binary" --revision 2 --out "$work/debs" --compression none)
root="$work/root"
mkdir -p "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/info"
touch "$root/var/lib/dpkg/status"
chmod -R 0755 "$root"
dpkg_in_tree() { dpkg --root="$root" --force-script-chrootless --force-depends --force-not-root "$@"; }
fail() { echo "FAIL: $*" >&2; [ -f "$work/state/stderr" ] && tail -20 "$work/state/stderr" >&2; exit 1; }

log "installing $(basename "$first") into $root"
dpkg_in_tree -i "$first" >/dev/null
[ -x "$root/usr/bin/inmanta" ] || fail "no /usr/bin/inmanta"
cmp -s "$old_binary" "$root/usr/bin/inmanta" || fail "revision 1 did not install its own binary"
grep -q '^#bind-port =' "$root/etc/inmanta/inmanta.cfg" || fail "inmanta.cfg lacks the commented options"
getent passwd inmanta >/dev/null || fail "no service user"
[ "$(stat -c %U "$root/var/lib/inmanta")" = inmanta ] || fail "/var/lib/inmanta is not the service user's"

# The unit's command line, its paths moved into the tree, on a free port.
start_server() {
  local line
  line=$(sed -n 's/^ExecStart=//p' "$root/lib/systemd/system/inmanta-server.service")
  [ -n "$line" ] || fail "the unit has no ExecStart"
  line=${line//\/usr\/bin\//$root\/usr\/bin\/}
  line=${line//\/etc\/inmanta/$root\/etc\/inmanta}
  line=${line//\/var\/lib\/inmanta/$root\/var\/lib\/inmanta}
  mkdir -p "$work/state" && : >"$work/state/stdout" && : >"$work/state/stderr"
  # shellcheck disable=SC2086 # the unit's words, as systemd splits them
  setpriv --reuid=inmanta --regid=inmanta --init-groups -- $line --bind-port 0 \
    >"$work/state/stdout" 2>"$work/state/stderr" &
  server_pid=$!
  url=$(wait_for_server_url "$work/state" "$server_pid" 60) || fail "the server did not start"
}
stop_server() { kill "$server_pid"; wait "$server_pid" || true; server_pid=""; }
login() {
  curl -sf -X POST -H 'Content-Type: application/json' \
    -d "{\"username\": \"admin\", \"password\": \"$1\"}" "$url/api/v2/login" |
    sed -n 's/.*"token": *"\([^"]*\)".*/\1/p'
}
# curl that shows the server's answer when it refuses.
call() { curl -sS --fail-with-body -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }

log "running the unit's ExecStart as the service user"
start_server
[ "$(stat -c %U "$root/var/lib/inmanta/inmanta.db")" = inmanta ] || fail "the database is not the service user's"
generated=$(cat "$root/var/lib/inmanta/initial-admin-password")
token=$(login "$generated")
[ -n "$token" ] || fail "cannot log in with the generated admin password"
password="Deb-test-password-$RANDOM-x"
call -X PATCH -d "{\"password\": \"$password\", \"current_password\": \"$generated\"}" \
  "$url/api/v2/user/admin/password" >/dev/null || fail "cannot choose the admin's password"
token=$(login "$password")
call -X PUT -d '{"name": "kept-across-upgrades"}' "$url/api/v2/project" >/dev/null || fail "cannot create a project"
stop_server

log "backup as the service user, restore as root: the database stays the service user's"
inmanta_in_tree=("$root/usr/bin/inmanta" -c "$root/etc/inmanta/inmanta.cfg" server --state-dir "$root/var/lib/inmanta")
setpriv --reuid=inmanta --regid=inmanta --init-groups -- "${inmanta_in_tree[@]}" backup "$root/var/lib/inmanta/backup.db" \
  >/dev/null || fail "backup as the service user"
"${inmanta_in_tree[@]}" restore "$root/var/lib/inmanta/backup.db" >/dev/null || fail "restore as root"
[ "$(stat -c %U "$root/var/lib/inmanta/inmanta.db")" = inmanta ] || fail "the restored database is not the service user's"

log "upgrading to $(basename "$second")"
echo "# an operator's edit" >>"$root/etc/inmanta/inmanta.cfg"
dpkg_in_tree -i "$second" >/dev/null
dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Version}' inmanta | grep -qx '.*-2' || fail "not upgraded"
cmp -s "$binary" "$root/usr/bin/inmanta" || fail "the upgrade did not install the newer build's binary"
grep -q "an operator's edit" "$root/etc/inmanta/inmanta.cfg" || fail "the upgrade replaced the edited inmanta.cfg"
start_server
token=$(login "$password")
[ -n "$token" ] || fail "the admin cannot log in after the upgrade"
call "$url/api/v2/project" | grep -q kept-across-upgrades ||
  fail "the project made before the upgrade is gone"
status=$(call "$url/api/v1/serverstatus")
echo "$status" | grep -q "\"version\": *\"$("$binary" --version | awk '{print $2}')\"" || fail "serverstatus version: $status"
stop_server

log "removing, then purging"
dpkg_in_tree -r inmanta >/dev/null
[ ! -e "$root/usr/bin/inmanta" ] || fail "the binary stayed after removal"
[ -f "$root/var/lib/inmanta/inmanta.db" ] || fail "removal deleted the state"
dpkg_in_tree --purge inmanta >/dev/null
[ ! -e "$root/var/lib/inmanta" ] || fail "purge kept the state"
[ ! -e "$root/etc/inmanta/inmanta.cfg" ] || fail "purge kept the configuration"
log "the Debian package installs, serves, upgrades with its state and removes cleanly"
