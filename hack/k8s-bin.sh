#!/usr/bin/env bash
# Builds (or reuses) the Kubernetes binaries the e2e tests run, from the Go module proxy with the Go on
# the machine -- no prebuilt downloads:
#   kube-apiserver, kube-controller-manager, kubectl  (k8s.io/kubernetes $K8S_VERSION)
#   etcd                                             (go.etcd.io/etcd/server/v3 $ETCD_VERSION)
#   helm                                             (helm.sh/helm/v3 $HELM_VERSION)
#
# Everything lands in the cache (default ~/.cache/sparkcdc, never in git): binaries in k8s-bin/$K8S_VERSION/, Go module
# and build caches in go/.
# Idempotent: a binary whose version stamp matches is reused without running Go at all.
# Logs go to stderr; the only stdout line is the binary directory (callers take it from there).
#
# Usage: hack/k8s-bin.sh [--force]
# Env:   K8S_VERSION ETCD_VERSION HELM_VERSION  versions (defaults pinned below)
#        SPARKCDC_CACHE_DIR, XDG_CACHE_HOME     the cache (hack/cache-dir.sh; default: ~/.cache/sparkcdc)
#        GO                                     go binary (default: go on PATH, else /usr/local/go/bin/go)
#        NICE                                   niceness for the builds (default 15)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
K8S_VERSION=${K8S_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.5.35}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
# Outside the work tree by default, so every fresh clone on a machine (CI clones afresh) reuses it.
# shellcheck source=cache-dir.sh
. "$ROOT/hack/cache-dir.sh"
CACHE=$(sparkcdc_cache_dir)
NICE=${NICE:-15}
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

GO=$(sparkcdc_go)

BIN_DIR=$CACHE/k8s-bin/$K8S_VERSION
SRC_DIR=$CACHE/k8s-bin/src
mkdir -p "$BIN_DIR" "$SRC_DIR"

log() { echo "k8s-bin: $*" >&2; }

# One build at a time per cache (parallel pytest sessions may all ask for the binaries).
exec 9>"$CACHE/k8s-bin/.lock"
flock 9

# stamp NAME VERSION -> true when BIN_DIR/NAME exists and was built from VERSION.
fresh() {
  [ "$FORCE" -eq 0 ] && [ -x "$BIN_DIR/$1" ] && [ "$(cat "$BIN_DIR/$1.version" 2>/dev/null)" = "$2" ]
}
stamp() { echo "$2" >"$BIN_DIR/$1.version"; }

need_k8s=0
for b in kube-apiserver kube-controller-manager kubectl; do fresh "$b" "$K8S_VERSION" || need_k8s=1; done
need_etcd=0; fresh etcd "$ETCD_VERSION" || need_etcd=1
need_helm=0; fresh helm "$HELM_VERSION" || need_helm=1

if [ $((need_k8s + need_etcd + need_helm)) -eq 0 ]; then
  log "cached binaries in $BIN_DIR"
  echo "$BIN_DIR"
  exit 0
fi

[ -x "$GO" ] || { log "no Go toolchain found (set GO=/path/to/go)"; exit 1; }
export GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS="-modcacherw -buildvcs=false"
GOCMD=(nice -n "$NICE" "$GO")
start=$(date +%s)
log "building into $BIN_DIR with $("$GO" version)"

if [ "$need_k8s" -eq 1 ]; then
  # go install refuses k8s.io/kubernetes (its go.mod replaces the staging modules with ./staging/...),
  # so build from a wrapper module that replaces each staging module with its published v0.x.y twin.
  staging_version=v0.${K8S_VERSION#v1.}
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  log "downloading k8s.io/kubernetes@$K8S_VERSION"
  k8s_dir=$("$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -f "$k8s_dir/go.mod" ] || { log "cannot find k8s.io/kubernetes go.mod (got '$k8s_dir')"; exit 1; }
  wrap=$SRC_DIR/kubernetes-$K8S_VERSION
  rm -rf "$wrap" && mkdir -p "$wrap"
  {
    echo "module sparkcdc.test/k8swrapper"
    echo
    echo "go $(sed -n 's/^go //p' "$k8s_dir/go.mod")"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    # e.g. "	k8s.io/api => ./staging/src/k8s.io/api"
    sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => ./staging/src/.*#\1#p' "$k8s_dir/go.mod" |
      sort -u | while read -r m; do echo "	$m => $m $staging_version"; done
    echo ")"
  } >"$wrap/go.mod"
  log "wrapper module: $(grep -c ' => ' "$wrap/go.mod") staging replaces"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  cmds=(kube-apiserver kube-controller-manager kubectl)
  (
    cd "$wrap"
    # Explicit @version: a bare `go get pkg` means @upgrade and would pull a newer kubernetes.
    pkgs=()
    for c in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c@$K8S_VERSION"); done
    log "go get ${pkgs[*]}"
    "${GOCMD[@]}" get "${pkgs[@]}" >&2
    for c in "${cmds[@]}"; do
      log "go build $c"
      "${GOCMD[@]}" build -tags selinux,notest -trimpath -ldflags "$ldflags" \
        -o "$BIN_DIR/$c.tmp" "k8s.io/kubernetes/cmd/$c" >&2
      mv -f "$BIN_DIR/$c.tmp" "$BIN_DIR/$c"
      stamp "$c" "$K8S_VERSION"
    done
  )
fi

if [ "$need_etcd" -eq 1 ]; then
  # Same story: etcd's server module replaces its sibling modules with relative paths; in a wrapper
  # those replaces are ignored and the published siblings at the same version are used.
  wrap=$SRC_DIR/etcd-$ETCD_VERSION
  rm -rf "$wrap" && mkdir -p "$wrap"
  printf 'module sparkcdc.test/etcdwrapper\n\ngo 1.23\n' >"$wrap/go.mod"
  (
    cd "$wrap"
    log "go get go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    "${GOCMD[@]}" get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
    log "go build etcd"
    "${GOCMD[@]}" build -trimpath \
      -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION" \
      -o "$BIN_DIR/etcd.tmp" go.etcd.io/etcd/server/v3 >&2
    mv -f "$BIN_DIR/etcd.tmp" "$BIN_DIR/etcd"
    stamp etcd "$ETCD_VERSION"
  )
fi

if [ "$need_helm" -eq 1 ]; then
  # helm's default Kubernetes version (.Capabilities.KubeVersion for `helm template`, lint) comes from
  # ldflags; without them a `go install`ed helm claims v1.20. Pin it to the control plane we test on.
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  hl="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    hl+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
  done
  log "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  GOBIN=$BIN_DIR/.helm-tmp "${GOCMD[@]}" install -trimpath -ldflags "$hl" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
  mv -f "$BIN_DIR/.helm-tmp/helm" "$BIN_DIR/helm"
  rmdir "$BIN_DIR/.helm-tmp"
  stamp helm "$HELM_VERSION"
fi

log "built in $(($(date +%s) - start))s; binaries in $BIN_DIR"
echo "$BIN_DIR"
