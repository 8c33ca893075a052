#!/usr/bin/env bash
# Builds (or reuses) sparkcdc-binlogdec, the Go binlog decoder of parallel catch-up (hack/binlogdec/,
# github.com/go-mysql-org/go-mysql's replication parser), from the Go module proxy with the Go on the
# machine -- no prebuilt downloads. The binary lands in the cache (default ~/.cache/sparkcdc, never in
# git) at binlogdec/$VERSION/sparkcdc-binlogdec, where operator/sparkcdc/mysql/binlog_native.py looks;
# Go module and build caches in go/ (shared with hack/k8s-bin.sh).
# Idempotent: a binary built from the same sources is reused without running Go at all. Without Go,
# it says so and exits 0: catch-up then decodes with python-mysql-replication.
#
# Usage: hack/binlogdec.sh [--force]
# Env:   SPARKCDC_CACHE_DIR  cache root (default: ~/.cache/sparkcdc)
#        GO                  go binary (default: go on PATH, else /usr/local/go/bin/go)
#        NICE                niceness for the build (default 15)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=$ROOT/hack/binlogdec
CACHE=${SPARKCDC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sparkcdc}
NICE=${NICE:-15}
# Must match DECODER_VERSION in operator/sparkcdc/mysql/binlog_native.py.
VERSION=$(sed -n 's/^DECODER_VERSION = "\(.*\)".*/\1/p' "$ROOT/operator/sparkcdc/mysql/binlog_native.py")
OUT=$CACHE/binlogdec/$VERSION
BIN=$OUT/sparkcdc-binlogdec
SUM=$(cat "$0" "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go | sha256sum | cut -c1-16)

log() { echo "binlogdec: $*" >&2; }

if [ "${1:-}" != "--force" ] && [ -x "$BIN" ] && [ "$(cat "$BIN.sources" 2>/dev/null)" = "$SUM" ]; then
  log "cached $BIN"
  echo "$BIN"
  exit 0
fi
if [ -z "${GO:-}" ]; then
  GO=$(command -v go 2>/dev/null || true)
  [ -n "$GO" ] || GO=/usr/local/go/bin/go
fi
if [ ! -x "$GO" ] && ! command -v "$GO" >/dev/null 2>&1; then
  log "no Go on this machine: parallel catch-up will decode with python-mysql-replication"
  exit 0
fi

mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
export GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GOFLAGS=-mod=mod
# go-mysql v1.12.0 normalises a DATETIME with a zero month or day ('2024-00-10', allowed without
# NO_ZERO_IN_DATE) into another date; python-mysql-replication and the snapshot give NULL for it. The
# build uses a copy of the module with that one line patched (rendered as text, which sparkcdc's
# canonical conversion turns into NULL like every zero date).
BUILD=$OUT/build
rm -rf "$BUILD" && mkdir -p "$BUILD"
cp "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go "$BUILD"/
MOD_DIR=$(cd "$BUILD" && "$GO" mod download -json github.com/go-mysql-org/go-mysql | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
cp -r "$MOD_DIR" "$BUILD/go-mysql" && chmod -R u+w "$BUILD/go-mysql"
sed -i 's/\tif intPart < 107420450816 {/\tif intPart < 107420450816 || month == 0 || day == 0 {/' \
  "$BUILD/go-mysql/replication/row_event.go"
grep -q 'intPart < 107420450816 || month == 0 || day == 0' "$BUILD/go-mysql/replication/row_event.go" \
  || { log "the go-mysql patch no longer applies"; exit 1; }
(cd "$BUILD" && "$GO" mod edit -replace github.com/go-mysql-org/go-mysql=./go-mysql)
# The decoder's own unit tests (hack/binlogdec/*_test.go) run with every build: a binary is only ever
# built from sources whose tests pass.
log "go test + go build $SRC (go-mysql patched) -> $BIN"
(cd "$BUILD" && nice -n "$NICE" "$GO" test -count=1 . >&2)
(cd "$BUILD" && nice -n "$NICE" "$GO" build -trimpath -o "$BIN.tmp" .)
rm -rf "$BUILD"
mv "$BIN.tmp" "$BIN"
echo "$SUM" >"$BIN.sources"
echo "$BIN"
