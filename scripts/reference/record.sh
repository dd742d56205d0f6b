#!/usr/bin/env bash
# Record the real Inmanta's answer for cases (see docs/compiler-conformance.md):
#   scripts/reference/record.sh [--force] [--jobs N] [--timeout S] CASE...   (default: every case and example)
#   scripts/reference/record.sh show CASE                                    (print, write nothing)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
"$root/scripts/inmanta-reference.sh" install
bin="$("$root/scripts/inmanta-reference.sh" path)"
# exec is a module our compiler ships built in; the reference needs it too for the exec cases.
"$bin/python" -c 'import inmanta_plugins.exec' 2>/dev/null || "$bin/pip" install -q "inmanta-module-exec==2.1.1"
if [ "${1:-}" = show ]; then
  shift
  exec "$bin/python" "$here/compile_cases.py" show "$@"
fi
args=("$@")
has_case=false
for a in "${args[@]}"; do case "$a" in -*|[0-9]*) ;; *) has_case=true ;; esac; done
if ! $has_case; then
  args+=("$root/compiler/tests/cases" "$root/examples/webfleet" "$root/examples/modules-templates" "$root/examples/unknowns")
fi
exec "$bin/python" "$here/compile_cases.py" record "${args[@]}"
