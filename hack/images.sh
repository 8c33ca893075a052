#!/usr/bin/env bash
# Builds (or reuses) sparkcdc's two container images with podman, from the project's own Dockerfiles:
#   ghcr.io/sparkcdc/sparkcdc-spark:$VERSION     spark_images/driver/Dockerfile   (driver and executor pods)
#   ghcr.io/sparkcdc/sparkcdc-operator:$VERSION  spark_images/operator/Dockerfile (the chart's operator)
# $VERSION is pyproject.toml's version: the tags the CRD's default spec.spark.image and the chart expect.
#
# Both Dockerfiles start FROM debian:bookworm-slim. Where that image is not in podman's storage it is
# seeded from Debian's packages (mmdebstrap --variant=minbase, imported and tagged with that name), so
# the build never needs a container registry; users who can pull get the real one. The root file
# system tarball is cached in ~/.cache/sparkcdc/images/.
#
# Cached: each image carries the label io.sparkcdc.inputs, a hash of everything its build reads (its
# Dockerfile and .dockerignore, the files of its context, the base image's id); when the existing image
# has the same hash, podman is not run at all. Within a build, podman's layer cache keeps the Debian,
# Java and PyPI layers when only sparkcdc's code changed.
# Idempotent and concurrency-safe (flock). Installs podman, runc and mmdebstrap with apt when missing.
# Logs go to stderr; stdout gets one line per image: its reference.
#
# Usage: hack/images.sh [--force] [spark|operator ...]      (default: both)
# Env:   SPARKCDC_CACHE_DIR, XDG_CACHE_HOME  the cache (hack/cache-dir.sh; default: ~/.cache/sparkcdc)
#        SPARKCDC_BUILD_CA_DIR  extra CA certificates for the builds (default: /usr/local/share/ca-certificates)
#        NICE                niceness for the builds (default 15)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=cache-dir.sh
. "$ROOT/hack/cache-dir.sh"
CACHE=$(sparkcdc_cache_dir)
NICE=${NICE:-15}
BASE=docker.io/library/debian:bookworm-slim
LABEL=io.sparkcdc.inputs
FORCE=0
targets=()
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    spark | operator) targets+=("$arg") ;;
    *) echo "usage: $0 [--force] [spark|operator ...]" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(spark operator)

log() { echo "images: $*" >&2; }

mkdir -p "$CACHE/images"
exec 9>"$CACHE/images/.lock"
flock 9

need_apt=()
command -v podman >/dev/null 2>&1 || need_apt+=(podman uidmap fuse-overlayfs slirp4netns)
command -v runc >/dev/null 2>&1 || need_apt+=(runc)
command -v mmdebstrap >/dev/null 2>&1 || need_apt+=(mmdebstrap)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# crun, podman's default runtime, refuses hybrid cgroup layouts (common on CI machines) and raising
# resource limits may be refused: runc, cgroupfs and explicit limits work everywhere podman does.
# The same flags are in sparkcdc.testing.containers, which runs the images in tests.
P=(podman --runtime runc --cgroup-manager cgroupfs)
LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
# A machine whose HTTPS egress is inspected trusts extra CAs from /usr/local/share/ca-certificates; the
# builds need them too (pip, Maven, the Go proxy). Mounted there during RUN, the Debian ca-certificates
# install of the first stage adds them to the image's trust store (so an image built on such a machine
# trusts them as well: build images you publish where that directory is empty, or set this to "").
CA_DIR=${SPARKCDC_BUILD_CA_DIR-/usr/local/share/ca-certificates}
CA_MOUNT=()
if [ -n "$CA_DIR" ] && compgen -G "$CA_DIR/*.crt" >/dev/null; then
  CA_MOUNT=(-v "$CA_DIR:/usr/local/share/ca-certificates:ro")
fi

VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/pyproject.toml" | head -1)
[ -n "$VERSION" ] || { log "no version in pyproject.toml"; exit 1; }

seed_base() {
  if "${P[@]}" image exists "$BASE"; then
    return
  fi
  local tar=$CACHE/images/debian-bookworm-minbase.tar
  if [ ! -s "$tar" ]; then
    log "seeding $BASE from Debian packages: mmdebstrap --variant=minbase bookworm"
    # The output's extension tells mmdebstrap to write a tarball.
    rm -f "$tar.partial.tar"
    nice -n "$NICE" mmdebstrap --quiet --variant=minbase bookworm "$tar.partial.tar" >&2
    mv "$tar.partial.tar" "$tar"
  fi
  log "podman import $tar as $BASE"
  "${P[@]}" import --change 'CMD ["bash"]' "$tar" "$BASE" >/dev/null
}

# inputs_hash DOCKERFILE FILE_OR_DIR... -> a hash of the Dockerfile, its .dockerignore, the given
# context files (without byte code and egg-info, which the .dockerignore files exclude) and the base.
inputs_hash() {
  local dockerfile=$1
  shift
  (
    cd "$ROOT"
    echo "base $("${P[@]}" image inspect --format '{{.Id}}' "$BASE")"
    find "$dockerfile" "$dockerfile.dockerignore" "$@" -type f \
      ! -path '*/__pycache__/*' ! -name '*.pyc' ! -path '*.egg-info/*' -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum
  ) | sha256sum | cut -c1-16
}

build() {
  local name=$1 image=$2 dockerfile=$3
  shift 3
  local sum current old start
  sum=$(inputs_hash "$dockerfile" "$@")
  current=$("${P[@]}" image inspect --format "{{index .Labels \"$LABEL\"}}" "$image" 2>/dev/null || true)
  if [ "$FORCE" -eq 0 ] && [ "$current" = "$sum" ]; then
    log "cached $image ($LABEL=$sum)"
    echo "$image"
    return
  fi
  old=$("${P[@]}" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
  log "building $image from $dockerfile ($LABEL=$sum)"
  start=$(date +%s)
  (
    cd "$ROOT"
    nice -n "$NICE" "${P[@]}" build --pull=never --network host "${LIMITS[@]}" "${CA_MOUNT[@]}" --layers \
      -f "$dockerfile" --ignorefile "$dockerfile.dockerignore" \
      --label "$LABEL=$sum" -t "$image" . >&2
  )
  log "built $image in $(($(date +%s) - start))s, $("${P[@]}" image inspect --format '{{.Size}}' "$image") bytes"
  # The image this build replaced is left without a tag: remove it (layers shared with the new one stay).
  if [ -n "$old" ] && [ "$old" != "$("${P[@]}" image inspect --format '{{.Id}}' "$image")" ]; then
    "${P[@]}" rmi "$old" >/dev/null 2>&1 || true
  fi
  echo "$image"
}

seed_base
for t in "${targets[@]}"; do
  case "$t" in
    spark)
      build spark "ghcr.io/sparkcdc/sparkcdc-spark:$VERSION" spark_images/driver/Dockerfile \
        pyproject.toml README.md operator binlogdec hack/cache-dir.sh spark_images/driver/entrypoint.sh
      ;;
    operator)
      build operator "ghcr.io/sparkcdc/sparkcdc-operator:$VERSION" spark_images/operator/Dockerfile \
        pyproject.toml README.md operator
      ;;
  esac
done
