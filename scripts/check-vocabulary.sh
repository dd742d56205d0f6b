#!/usr/bin/env bash
# One name for each thing (ARCHITECTURE.md, "Vocabulary"): resource states, handler outcomes,
# changes, blocked flags, dry-run findings and compile statuses are enums of `api::state`; their
# wire names are spelled there and in the SQL that stores them, nowhere else. This check fails
# when a string literal of one of them appears in the code of another crate (tests excluded:
# they compare against the wire form on purpose), and when a resource version id is built or cut
# by hand instead of through `api::resource`.
set -euo pipefail
cd "$(dirname "$0")/.."

states='deployed|skipped|failed|deploying|available|cancelled|undefined|skipped_for_undefined'
states+='|skipped_for_dependency|unavailable|orphaned|dry|non_compliant|nochange|not_blocked'
states+='|temporarily_blocked|queued|agent_down|unmodified'

# Rust sources outside `api`, without test, bench and example code: files of tests
# (`tests.rs`, `test_support.rs`) are left out, and each other file is read up to its inline
# `mod tests {` (the project keeps unit tests at the bottom of a file).
# Extra source folders to check may be given as arguments.
dirs=(agent/src app/src compiler/src orchestrator/src service/src server/src "$@")
code() {
  find "${dirs[@]}" -name '*.rs' ! -name tests.rs ! -name test_support.rs -print0 |
    xargs -0 awk 'FNR == 1 { skipping = 0 } /^mod tests? \{/ { skipping = 1 } !skipping { print FILENAME ":" FNR ": " $0 }'
}

found=0
if literals=$(code | grep -E "\"($states)\"" | grep -vE '^[^:]+:[0-9]+: *//'); then
  echo "state names spelled as string literals (use the enums of api::state):" >&2
  echo "$literals" >&2
  found=1
fi
if versions=$(code | grep -E '",v="|,v=\{' | grep -vE '^[^:]+:[0-9]+: *//'); then
  echo "resource version ids built or cut by hand (use api::ResourceVersionId; for stored text api::resource::versioned_id / unversioned):" >&2
  echo "$versions" >&2
  found=1
fi
[ "$found" = 0 ] && echo "vocabulary: no state literal and no hand-made version id outside api"
exit "$found"
