#!/usr/bin/env bash
# Copies the generated CdcPipeline CRD into the Helm chart (charts/sparkcdc/crds/), byte for byte.
# Run after `make crd`; tests/unit/deploy/test_deploy_chart_files.py fails while the copies differ.
# templates/crd.yaml (crds.templated) renders this same copy with .Files.Get: there is no third one.
#   hack/sync-chart-crd.sh          copy
#   hack/sync-chart-crd.sh --check  exit 1 (and say so) when the chart's copy is stale
set -euo pipefail
cd "$(dirname "$0")/.."
src=crds/cdcpipelines.sparkcdc.io.yaml
dst=charts/sparkcdc/crds/cdcpipelines.sparkcdc.io.yaml
if [ "${1:-}" = "--check" ]; then
  if ! cmp -s "$src" "$dst"; then
    echo "$dst differs from $src: run hack/sync-chart-crd.sh" >&2
    exit 1
  fi
  exit 0
fi
mkdir -p "$(dirname "$dst")"
cp "$src" "$dst"
echo "copied $src -> $dst"
