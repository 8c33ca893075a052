#!/usr/bin/env bash
# `make test`: the whole suite as two pytest runs side by side, both of which must pass.
#
# The cluster tests (markers e2e and container: a control plane, the operator, pods as containers)
# mostly wait on the API server and on pods starting, the local tests (unit and integration: MariaDB,
# PostgreSQL, Spark) mostly compute; on the 2-core CI machine running them together takes little
# more than the longer of the two instead of their sum (docs/testing.md, "Running the suite").
# The cluster run's output is printed when both are done; pytest's exit code 5 (nothing collected)
# fails like any other.
#
# Usage: hack/test.sh [pytest arguments...]    (passed to both runs)
# Env:   PY  the interpreter (default .venv/bin/python)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
log=$(mktemp -t sparkcdc-cluster-tests.XXXXXX)
trap 'rm -f "$log"' EXIT

"$PY" -m pytest -m "e2e or container" "$@" >"$log" 2>&1 &
cluster=$!
trap 'kill "$cluster" 2>/dev/null; exit 130' INT TERM
"$PY" -m pytest -m "not (e2e or container)" "$@"
local_rc=$?
wait "$cluster"
cluster_rc=$?
echo
echo "==================== cluster tests (e2e, container) ===================="
cat "$log"
echo "test: local tests exit $local_rc, cluster tests exit $cluster_rc"
[ "$local_rc" -eq 0 ] && [ "$cluster_rc" -eq 0 ]
