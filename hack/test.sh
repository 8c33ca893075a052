#!/usr/bin/env bash
# `make test`: the whole suite as three pytest runs side by side, all of which must pass.
#
# The cluster tests (markers e2e and container: a control plane, the operator, pods as containers)
# mostly wait on the API server and on pods starting; the local tests (unit and integration: MariaDB,
# PostgreSQL, Spark) mostly compute, and the `heavy` ones among them (a Delta-enabled JVM, long kill
# loops) take minutes each. On the 2-core CI machine the three runs together take little more than
# the longest of them instead of their sum (docs/testing.md, "Running the suite").
# The other runs' output is printed when all are done; pytest's exit code 5 (nothing collected)
# fails like any other.
#
# Usage: hack/test.sh [pytest arguments...]    (passed to every run)
# Env:   PY  the interpreter (default .venv/bin/python)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
cluster_log=$(mktemp -t sparkcdc-cluster-tests.XXXXXX)
heavy_log=$(mktemp -t sparkcdc-heavy-tests.XXXXXX)
trap 'rm -f "$cluster_log" "$heavy_log"' EXIT

"$PY" -m pytest -m "e2e or container" "$@" >"$cluster_log" 2>&1 &
cluster=$!
"$PY" -m pytest -m "heavy and not (e2e or container)" "$@" >"$heavy_log" 2>&1 &
heavy=$!
trap 'kill "$cluster" "$heavy" 2>/dev/null; exit 130' INT TERM
"$PY" -m pytest -m "not (e2e or container or heavy)" "$@"
local_rc=$?
wait "$heavy"
heavy_rc=$?
wait "$cluster"
cluster_rc=$?
echo
echo "==================== heavy local tests (Delta, chaos) ===================="
cat "$heavy_log"
echo
echo "==================== cluster tests (e2e, container) ===================="
cat "$cluster_log"
echo "test: local tests exit $local_rc, heavy local tests exit $heavy_rc, cluster tests exit $cluster_rc"
[ "$local_rc" -eq 0 ] && [ "$heavy_rc" -eq 0 ] && [ "$cluster_rc" -eq 0 ]
