#!/usr/bin/env bash
# Builds (or reuses) gh-ost, GitHub's online schema-change tool, which the integration tests run
# against a real MariaDB while a pipeline streams (tests/integration/binlog/test_online_schema_change.py),
# from the Go module proxy with the Go on the machine -- no prebuilt downloads. The binary lands in
# the cache (hack/cache-dir.sh: default ~/.cache/sparkcdc, never in git) at gh-ost/$VERSION/gh-ost;
# Go module and build caches in go/ (shared with binlogdec/build.sh and hack/k8s-bin.sh).
#
# A pinned version, because the proxy refuses to list gh-ost's versions (so `@latest`, and even
# `go install ...@version`, which asks the list for deprecations, fail); `go mod download` of one
# version works; its dependencies come from the proxy too, as go.sum pins them (the module's zip
# carries no vendor/ tree).
#
# One change to the source: gh-ost sets its session's isolation level through the driver's DSN as
# `transaction_isolation`, a name MariaDB knows only from 11.1 on; 10.x (the tests' server) and
# MySQL 5.7 spell it `tx_isolation`, MySQL 8.0 knows only the new name. The build here is for the
# tests' MariaDB, so it uses the old spelling; the edit must match exactly once, or the build stops.
#
# Idempotent: a binary built by this script's current text is reused without running Go at all.
# Without Go it says so and exits 1. Logs go to stderr; the only stdout line is the binary's path.
#
# Usage: hack/gh-ost.sh [--force | --path]
# Env:   GH_OST_VERSION                    version (default pinned below)
#        SPARKCDC_CACHE_DIR, XDG_CACHE_HOME the cache (hack/cache-dir.sh)
#        GO                                go binary (default: go on PATH, else /usr/local/go/bin/go)
#        NICE                              niceness for the build (default 15)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${GH_OST_VERSION:-v1.1.6}
# shellcheck source=cache-dir.sh
. "$ROOT/hack/cache-dir.sh"
CACHE=$(sparkcdc_cache_dir)
NICE=${NICE:-15}
MODE=${1:-build}
OUT=$CACHE/gh-ost/$VERSION
BIN=$OUT/gh-ost
SUM=$(sha256sum "$ROOT/hack/gh-ost.sh" | cut -c1-16)
export GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GOFLAGS=-mod=mod GOTOOLCHAIN=local

log() { echo "gh-ost: $*" >&2; }

case "$MODE" in
  build | --force) ;;
  --path) echo "$BIN"; exit 0 ;;
  *) echo "usage: $0 [--force | --path]" >&2; exit 2 ;;
esac

if [ "$MODE" = build ] && [ -x "$BIN" ] && [ "$(cat "$BIN.sum" 2>/dev/null)" = "$SUM" ]; then
  echo "$BIN"
  exit 0
fi
GO=$(sparkcdc_go)
[ -x "$GO" ] || { log "no Go toolchain ($GO): cannot build gh-ost"; exit 1; }

mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
log "building gh-ost $VERSION into $OUT"
MODDIR=$(cd "$OUT" && "$GO" mod download -json "github.com/github/gh-ost@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$MODDIR" ] || { log "go mod download gave no source directory for github.com/github/gh-ost@$VERSION"; exit 1; }
SRC=$OUT/src
rm -rf "$SRC"
cp -r "$MODDIR" "$SRC"
chmod -R u+w "$SRC"
CONN=$SRC/go/mysql/connection.go
OLD='fmt.Sprintf("transaction_isolation=%q", this.TransactionIsolation)'
NEW='fmt.Sprintf("tx_isolation=%q", this.TransactionIsolation)'
[ "$(grep -cF "$OLD" "$CONN")" = 1 ] || { log "$CONN no longer holds $OLD once: port the edit"; exit 1; }
sed -i "s|transaction_isolation=%q|tx_isolation=%q|" "$CONN"
grep -qF "$NEW" "$CONN" || { log "the edit of $CONN failed"; exit 1; }
(cd "$SRC" && rm -rf vendor && nice -n "$NICE" "$GO" build -o "$BIN.tmp" -ldflags "-X main.AppVersion=$VERSION" ./go/cmd/gh-ost)
mv "$BIN.tmp" "$BIN"
echo "$SUM" >"$BIN.sum"
rm -rf "$SRC"
log "built $BIN"
echo "$BIN"
