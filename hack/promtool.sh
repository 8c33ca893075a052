#!/usr/bin/env bash
# Builds (or reuses) promtool, which the chart tests use to check and unit-test the alert rules the
# chart ships (tests/unit/test_chart_monitoring.py), from the Go module proxy with the Go on the
# machine -- no prebuilt downloads:
#   promtool  (github.com/prometheus/prometheus/cmd/promtool $PROMETHEUS_VERSION)
#
# The Go module version v0.X.Y is Prometheus 3.X.Y (Prometheus tags its Go module v0.*). promtool's
# packages need neither cgo nor the web UI's assets, so a plain `go install` suffices. The tag
# remove_all_sd leaves out Prometheus' service discovery plugins (the AWS, Azure, GCE, Kubernetes...
# SDKs, most of the build): `check rules` and `test rules` do not use them (only `check config` of a
# prometheus.yml naming such a discovery would).
# Lands in the cache (default ~/.cache/sparkcdc, never in git): the binary in promtool/$VERSION/, Go
# module and build caches in go/ (shared with hack/k8s-bin.sh).
# Idempotent: a binary whose version stamp matches is reused without running Go at all.
# Logs go to stderr; the only stdout line is the binary's path.
#
# Usage: hack/promtool.sh [--force]
# Env:   PROMETHEUS_VERSION                  Go module version (default pinned below)
#        SPARKCDC_CACHE_DIR, XDG_CACHE_HOME  the cache (hack/cache-dir.sh; default: ~/.cache/sparkcdc)
#        GO                                  go binary (default: go on PATH, else /usr/local/go/bin/go)
#        NICE                                niceness for the build (default 15)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}
# shellcheck source=cache-dir.sh
. "$ROOT/hack/cache-dir.sh"
CACHE=$(sparkcdc_cache_dir)
NICE=${NICE:-15}
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

GO=$(sparkcdc_go)

BIN_DIR=$CACHE/promtool/$PROMETHEUS_VERSION
mkdir -p "$BIN_DIR"
log() { echo "promtool: $*" >&2; }

# One build at a time per cache (parallel pytest sessions may all ask for it).
exec 9>"$CACHE/promtool/.lock"
flock 9

if [ "$FORCE" -eq 0 ] && [ -x "$BIN_DIR/promtool" ] &&
  [ "$(cat "$BIN_DIR/promtool.version" 2>/dev/null)" = "$PROMETHEUS_VERSION" ]; then
  log "cached $BIN_DIR/promtool"
  echo "$BIN_DIR/promtool"
  exit 0
fi

[ -x "$GO" ] || { log "no Go toolchain found (set GO=/path/to/go)"; exit 1; }
export GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS="-modcacherw -buildvcs=false"
start=$(date +%s)
log "go install github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION with $("$GO" version)"
# promtool --version reads these; without them it prints empty fields.
ldflags="-s -w -X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION"
ldflags+=" -X github.com/prometheus/common/version.Revision=module-proxy"
GOBIN=$BIN_DIR/.tmp nice -n "$NICE" "$GO" install -trimpath -tags remove_all_sd -ldflags "$ldflags" \
  "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION" >&2
mv -f "$BIN_DIR/.tmp/promtool" "$BIN_DIR/promtool"
rmdir "$BIN_DIR/.tmp"
echo "$PROMETHEUS_VERSION" >"$BIN_DIR/promtool.version"
log "built in $(($(date +%s) - start))s: $BIN_DIR/promtool"
echo "$BIN_DIR/promtool"
