#!/usr/bin/env bash
# Builds (or reuses) sparkcdc-binlogdec, the Go binlog decoder of parallel catch-up (this folder,
# github.com/go-mysql-org/go-mysql's replication parser), from the Go module proxy with the Go on the
# machine -- no prebuilt downloads. The binary lands in the cache (hack/cache-dir.sh: default
# ~/.cache/sparkcdc, never in git) at binlogdec/$VERSION/sparkcdc-binlogdec, where
# operator/sparkcdc/mysql/binlog/native.py looks; $VERSION is binlogdec/VERSION, which Python reads
# too. Go module and build caches in go/ (shared with hack/k8s-bin.sh).
# Idempotent: a binary built from the same sources is reused without running Go at all. Without Go,
# it says so and exits 0: catch-up then decodes with python-mysql-replication.
#
# go-mysql is built patched (go-mysql.patch, a unified diff applied to a copy of the module's source):
# the patch names the go-mysql version it was written for, and any other version in go.mod, or a
# patch that no longer applies exactly, stops the build.
#
# Usage: binlogdec/build.sh [--force]   build (--force: even when the cached binary is current)
#        binlogdec/build.sh --check     only check the patch against go.mod and the downloaded module
#                                       (exit 0 when it applies, 3 when there is no Go to check with)
#        binlogdec/build.sh --path      print where the binary goes, build nothing
# Env:   SPARKCDC_CACHE_DIR, XDG_CACHE_HOME  the cache (hack/cache-dir.sh)
#        GO                  go binary (default: go on PATH, else /usr/local/go/bin/go)
#        NICE                niceness for the build (default 15)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=$ROOT/binlogdec
# shellcheck source=../hack/cache-dir.sh
. "$ROOT/hack/cache-dir.sh"
CACHE=$(sparkcdc_cache_dir)
NICE=${NICE:-15}
MODE=${1:-build}
VERSION=$(tr -d '[:space:]' <"$SRC/VERSION")
OUT=$CACHE/binlogdec/$VERSION
BIN=$OUT/sparkcdc-binlogdec
PATCH=$SRC/go-mysql.patch
SUM=$(cat "$SRC"/build.sh "$SRC"/VERSION "$PATCH" "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go | sha256sum | cut -c1-16)
export GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GOFLAGS=-mod=mod

log() { echo "binlogdec: $*" >&2; }

case "$MODE" in
  build | --force | --check) ;;
  --path) echo "$BIN"; exit 0 ;;
  *) echo "usage: $0 [--force | --check | --path]" >&2; exit 2 ;;
esac

# The guard of the patch: go.mod must require the go-mysql version it was written for.
GO_MYSQL=$(sed -n 's|^\(require\)\{0,1\}[[:space:]]*github.com/go-mysql-org/go-mysql \(v[^ ]*\).*$|\2|p' "$SRC/go.mod" | head -1)
WRITTEN_FOR=$(sed -n 's|^Upstream: github.com/go-mysql-org/go-mysql \(v[^ ]*\)$|\1|p' "$PATCH")
if [ -z "$GO_MYSQL" ] || [ "$GO_MYSQL" != "$WRITTEN_FOR" ]; then
  log "go.mod requires go-mysql ${GO_MYSQL:-(none found)}, but $PATCH was written for ${WRITTEN_FOR:-(none found)}:"
  log "check whether the new version still renders zero dates as other dates, then port the patch"
  log "(or delete it) and set its Upstream: line to the version go.mod requires"
  exit 1
fi

# apply_patch DIR [--dry-run]: exactly (no fuzz, no backup or reject files), or fail with the reason.
apply_patch() {
  command -v patch >/dev/null 2>&1 || { log "patch(1) is missing: apt-get install patch"; return 1; }
  if ! patch --batch --forward --fuzz=0 --no-backup-if-mismatch -r - -p1 -d "$1" -i "$PATCH" ${2:+"$2"} >&2; then
    log "$PATCH no longer applies to go-mysql $GO_MYSQL ($1): port it to the module's source"
    return 1
  fi
}

if [ "$MODE" = build ] && [ -x "$BIN" ] && [ "$(cat "$BIN.sources" 2>/dev/null)" = "$SUM" ]; then
  log "cached $BIN"
  echo "$BIN"
  exit 0
fi
GO=$(sparkcdc_go)
if [ ! -x "$GO" ] && ! command -v "$GO" >/dev/null 2>&1; then
  log "no Go on this machine: parallel catch-up will decode with python-mysql-replication"
  [ "$MODE" = --check ] && exit 3
  exit 0
fi

if [ "$MODE" = --check ]; then
  # The module as the build downloads it (already in the module cache wherever a build ran).
  MOD_DIR=$GOMODCACHE/github.com/go-mysql-org/go-mysql@$GO_MYSQL
  [ -d "$MOD_DIR" ] || { log "go-mysql $GO_MYSQL is not in $GOMODCACHE: build first ($0)"; exit 1; }
  apply_patch "$MOD_DIR" --dry-run
  log "$PATCH applies to go-mysql $GO_MYSQL"
  exit 0
fi

mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
# The build works on a copy of the decoder and of go-mysql's module source (the module cache is
# read-only and shared), patched, and replaced into the copy's go.mod.
BUILD=$OUT/build
rm -rf "$BUILD" && mkdir -p "$BUILD"
cp "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go "$BUILD"/
MOD_DIR=$(cd "$BUILD" && "$GO" mod download -json github.com/go-mysql-org/go-mysql | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
cp -r "$MOD_DIR" "$BUILD/go-mysql" && chmod -R u+w "$BUILD/go-mysql"
apply_patch "$BUILD/go-mysql"
(cd "$BUILD" && "$GO" mod edit -replace github.com/go-mysql-org/go-mysql=./go-mysql)
# The decoder's own unit tests (binlogdec/*_test.go) run with every build: a binary is only ever
# built from sources whose tests pass.
log "go test + go build $SRC (go-mysql patched) -> $BIN"
(cd "$BUILD" && nice -n "$NICE" "$GO" test -count=1 . >&2)
(cd "$BUILD" && nice -n "$NICE" "$GO" build -trimpath -o "$BIN.tmp" .)
rm -rf "$BUILD"
mv "$BIN.tmp" "$BIN"
echo "$SUM" >"$BIN.sources"
echo "$BIN"
