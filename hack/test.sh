#!/usr/bin/env bash
# `make test`: the whole suite as one pytest per lane, side by side, all of which must pass.
#
# The cluster tests (marker e2e: a control plane, the operator) and the container tests (marker
# container: the images, pods as containers, on control planes of their own) mostly wait on the API
# server and on pods starting; the Delta tests mostly wait on their MERGEs
# and batch intervals; the other local tests (unit and integration: MariaDB, PostgreSQL, Spark)
# compute more. Which local test runs in which lane is one table in tests/conftest.py (`_LANES`);
# on the 2-core CI machine the lanes together take little more than the longest of them instead
# of their sum (docs/testing.md, "Running the suite").
# The other lanes' output is printed when all are done; pytest's exit code 5 (nothing collected)
# fails like any other.
#
# Usage: hack/test.sh [pytest arguments...]    (passed to every lane)
# Env:   PY  the interpreter (default .venv/bin/python)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# sparkcdc's modules compiled once, before the lanes, rather than by whichever process imports
# them first (bytecode caching: Makefile).
unset PYTHONDONTWRITEBYTECODE
"$PY" -m compileall -q -j 0 operator/sparkcdc >/dev/null

# name, marker expression; the last lane runs in the foreground.
lanes=(
  "cluster tests (e2e)|e2e"
  "container tests|container"
  "Delta streaming tests|lane_delta_stream"
  "heavy local tests (Delta, chaos)|lane_heavy"
  "binlog integration tests|lane_binlog"
  "local tests|not (e2e or container or lane_delta_stream or lane_heavy or lane_binlog)"
)
logs=() pids=()
trap 'rm -f "${logs[@]}"' EXIT
for lane in "${lanes[@]::${#lanes[@]}-1}"; do
  log=$(mktemp -t sparkcdc-tests.XXXXXX)
  "$PY" -m pytest -m "${lane#*|}" "$@" >"$log" 2>&1 &
  logs+=("$log") pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
last=${lanes[-1]}
"$PY" -m pytest -m "${last#*|}" "$@"
codes=("$?")
summary="test: ${last%%|*} exit ${codes[0]}"
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  code=$?
  codes+=("$code")
  echo
  echo "==================== ${lanes[$i]%%|*} ===================="
  cat "${logs[$i]}"
  summary+=", ${lanes[$i]%%|*} exit $code"
done
echo "$summary"
for code in "${codes[@]}"; do
  [ "$code" -eq 0 ] || exit 1
done
