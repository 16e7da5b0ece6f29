#!/usr/bin/env bash
# Builds geoingest's container images locally, from Debian packages only: no
# image registry is needed. Run as root (debootstrap, rootful podman).
#
#   scripts/images.sh [base|builder|postgis|geoingest|versitygw|fauxqs|azurite|prometheus|all]...
#
# The images (podman's storage, or docker's with CONTAINER_CLI=docker):
#   localhost/geoingest/debian:bookworm     a slim Debian 12 root file system made with
#                                           debootstrap from the machine's apt mirror and
#                                           imported with `podman import` (or BASE_IMAGE,
#                                           e.g. docker.io/library/debian:bookworm-slim)
#   localhost/geoingest/postgis:15-3        PostgreSQL 15 + PostGIS 3 from Debian, with the
#                                           env interface of the postgis/postgis image
#   localhost/geoingest/geoingest:dev       the Dockerfile at the repository root, its
#                                           runtime stages on the base, with the binaries
#                                           built on this machine (deploy/images/binaries.sh)
#   localhost/geoingest/geoingest-slim:dev  its "slim" target: built without GDAL
#   localhost/geoingest/stack:dev           its "stack" target: the compose stack's init
#                                           and S3-to-SQS bridge, the Google Cloud emulators
#                                           and the Event Grid stand-in (deploy/stack)
#   localhost/geoingest/versitygw:v1.8.0    versitygw (S3 server), go install'ed on this machine
#   localhost/geoingest/prometheus:2.42     Prometheus (this machine's Debian binary), for the stack
#   localhost/geoingest/azurite:3.37.0      Azurite (Blob and Queue emulator) for the
#                                           compose file deploy/compose/azure.yml
#   localhost/geoingest/fauxqs:1.9.2        fauxqs (SQS server), npm install'ed on this
#                                           machine, on Debian's Node.js
#
# An image that exists is not rebuilt unless REBUILD=1 (geoingest's image is
# always rebuilt: its binaries are built with this machine's Go build cache
# and its layers are reused, so an unchanged tree takes seconds). The
# debootstrap tarball is kept in $GEOINGEST_IMAGE_CACHE (default
# /var/cache/geoingest), so even a wiped image store re-imports it without a
# download.
#
# geoingest's binaries are built on this machine, not in a Go builder image:
# it has the toolchain, GDAL's and PROJ's headers (scripts/setup.sh) and the
# build cache its tests fill, and, when it runs Debian 12 as the base does,
# the same glibc and library sonames (each image runs its binary once to
# prove it). On another system they are built in a builder image made from
# the base and this machine's Go toolchain (deploy/images/golang.Containerfile),
# as `docker build .` does in Docker Hub's golang image.
#
# The binaries build at nice 10: beside scripts/test.sh's go test, they
# would otherwise compile what go test is compiling, at the same priority.
# The rest is not niced: debootstrap and apt wait mostly on downloads and
# the disk, one package after another, and at nice 10 or 19 on a machine
# busy with more than the tests a debootstrap took 13 to 14 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

cli=${CONTAINER_CLI:-podman}
cache=${GEOINGEST_IMAGE_CACHE:-/var/cache/geoingest}
suite=bookworm
base=${BASE_IMAGE:-localhost/geoingest/debian:$suite}
goversion=$(go env GOVERSION | sed 's/^go//')
# The builder's tag names its recipe too: a changed recipe (a new -dev
# package) makes a new builder.
builder=${GO_IMAGE:-localhost/geoingest/golang:$goversion-$suite-$(sha256sum deploy/images/golang.Containerfile | cut -c1-8)}
postgis_image=localhost/geoingest/postgis:15-3
geoingest_image=${GEOINGEST_IMAGE:-localhost/geoingest/geoingest:dev}
slim_image=${GEOINGEST_SLIM_IMAGE:-localhost/geoingest/geoingest-slim:dev}
stack_image=${STACK_IMAGE:-localhost/geoingest/stack:dev}
versitygw_version=v1.8.0
versitygw_image=localhost/geoingest/versitygw:$versitygw_version
fauxqs_version=1.9.2
fauxqs_image=localhost/geoingest/fauxqs:$fauxqs_version
azurite_version=3.37.0
azurite_image=localhost/geoingest/azurite:$azurite_version
prometheus_image=localhost/geoingest/prometheus:2.42

log() { echo "images: $*" >&2; }
have() { [ "${REBUILD:-0}" != 1 ] && $cli image inspect "$1" >/dev/null 2>&1; }
# host_is_suite: this machine runs the base's Debian release, so binaries
# linked here find the same shared libraries in the base.
host_is_suite() { [ "$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")" = "$suite" ] && [ "${GEOINGEST_BUILD_IN_IMAGE:-0}" != 1 ]; }
timed() { local t0=$SECONDS; "$@"; log "$1 done in $((SECONDS - t0)) s"; }
# build IMAGE CONTEXT [ARGS...]: docker format, so that HEALTHCHECK is kept.
build() {
  local image=$1 context=$2; shift 2
  local fmt=(); [ "$cli" = podman ] && fmt=(--format docker)
  $cli build "${fmt[@]}" --build-arg "BASE=$base" -t "$image" "$@" "$context"
}

# mirror prints the Debian mirror the machine's apt uses.
mirror() {
  local m
  m=$(grep -hoE '^(deb|URIs:)[[:space:]]+(\[[^]]*\][[:space:]]+)?https?://[^[:space:]]+/debian/?([[:space:]]|$)' \
        /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | grep -oE 'https?://[^[:space:]]+' | head -n1 || true)
  echo "${m:-http://deb.debian.org/debian}"
}

image_base() {
  [ -n "${BASE_IMAGE:-}" ] && { log "base: using $BASE_IMAGE"; return; }
  # The recipe's hash names the tarball and labels the image: a changed
  # recipe makes a new root file system.
  local recipe
  recipe=$(sha256sum deploy/images/slim-rootfs.sh | cut -c1-12)
  if have "$base" && [ "$($cli image inspect --format '{{index .Labels "geoingest.rootfs"}}' "$base" 2>/dev/null)" = "$recipe" ]; then
    log "base: $base exists"; return
  fi
  local tar=$cache/debian-$suite-rootfs-$recipe.tar
  if [ ! -s "$tar" ] || [ "${REBUILD:-0}" = 1 ]; then
    local m dir; m=$(mirror); mkdir -p "$cache"; dir=$(mktemp -d "$cache/rootfs.XXXXXX")
    log "base: debootstrap --variant=minbase $suite from $m"
    debootstrap --variant=minbase --include=ca-certificates "$suite" "$dir" "$m" >"$cache/debootstrap.log" 2>&1 ||
      { tail -n 30 "$cache/debootstrap.log" >&2; rm -rf "$dir"; exit 1; }
    deploy/images/slim-rootfs.sh "$dir" "$m" "$suite"
    rm -f "$cache/debian-$suite-rootfs-"*.tar # other recipes'
    tar --numeric-owner -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
    rm -rf "$dir"
  fi
  log "base: podman import $tar ($(du -h "$tar" | cut -f1))"
  $cli import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' --change "LABEL geoingest.rootfs=$recipe" "$tar" "$base" >/dev/null
}

image_builder() {
  [ -n "${GO_IMAGE:-}" ] && { log "builder: using $GO_IMAGE"; return; }
  host_is_suite && { log "builder: none needed (this machine is Debian $suite: geoingest's binaries are built here)"; return; }
  have "$builder" && { log "builder: $builder exists"; return; }
  local goroot; goroot=$(go env GOROOT)
  log "builder: $builder (the base, gcc, and Go $goversion from $goroot)"
  if [ "$cli" = podman ]; then
    build "$builder" deploy/images -f deploy/images/golang.Containerfile -v "$goroot:/host-go:ro"
  else # docker build has no volumes: copy the toolchain into a context
    local ctx; ctx=$(mktemp -d); cp -a deploy/images/golang.Containerfile "$ctx/"; cp -a "$goroot" "$ctx/go"
    build "$builder" "$ctx" -f "$ctx/golang.Containerfile" --build-arg GO_FROM_CONTEXT=1; rm -rf "$ctx"
  fi
}

image_postgis() {
  have "$postgis_image" && { log "postgis: $postgis_image exists"; return; }
  log "postgis: $postgis_image"
  build "$postgis_image" deploy/postgis
}

image_geoingest() {
  log "geoingest: $geoingest_image, $slim_image and $stack_image from ./Dockerfile"
  local args=(-f Dockerfile --build-arg "RUNTIME_IMAGE=$base") ctx=. t0
  if host_is_suite; then
    ctx=$(mktemp -d); t0=$SECONDS
    nice -n 10 deploy/images/binaries.sh "$ctx/bin"
    log "geoingest: binaries built on this machine in $((SECONDS - t0)) s ($(du -sh "$ctx/bin" | cut -f1))"
    args+=(--build-arg BINARIES=prebuilt)
  else
    args+=(--build-arg "GO_IMAGE=$builder")
  fi
  build "$geoingest_image" "$ctx" "${args[@]}"
  build "$slim_image" "$ctx" "${args[@]}" --target slim
  build "$stack_image" "$ctx" "${args[@]}" --target stack
  [ "$ctx" = . ] || rm -rf "$ctx"
  # Each binary runs once in its image: a shared library missing from the
  # runtime stage fails here, not in a deployment.
  local run=($cli run --rm --network none --no-healthcheck --entrypoint) out
  out=$("${run[@]}" geoingest "$geoingest_image" -h 2>&1) || { echo "$out" >&2; return 1; }
  out=$("${run[@]}" geoingest "$slim_image" -h 2>&1) || { echo "$out" >&2; return 1; }
  out=$("${run[@]}" geoingest-stack "$stack_image" -h 2>&1 || true) # -h: exit 1
  if grep -q 'error while loading shared libraries' <<<"$out"; then echo "$out" >&2; return 1; fi
  local size='{{.Size}}'
  log "geoingest: $geoingest_image is $($cli image inspect --format "$size" "$geoingest_image" | awk '{printf "%.0f MB", $1/1e6}'), user $($cli image inspect --format '{{.Config.User}}' "$geoingest_image"); the slim build (no GDAL) $slim_image is $($cli image inspect --format "$size" "$slim_image" | awk '{printf "%.0f MB", $1/1e6}')"
}

image_versitygw() {
  have "$versitygw_image" && { log "versitygw: $versitygw_image exists"; return; }
  local bin ctx
  bin=$(command -v versitygw || echo "$(go env GOPATH)/bin/versitygw")
  if [ ! -x "$bin" ] || ! go version -m "$bin" | grep -q "mod.*github.com/versity/versitygw[[:space:]]*$versitygw_version"; then
    log "versitygw: go install github.com/versity/versitygw/cmd/versitygw@$versitygw_version"
    GOFLAGS= GOBIN="$(go env GOPATH)/bin" go install "github.com/versity/versitygw/cmd/versitygw@$versitygw_version"
    bin="$(go env GOPATH)/bin/versitygw"
  fi
  ctx=$(mktemp -d); cp deploy/versitygw/Containerfile "$ctx/"; cp "$bin" "$ctx/versitygw"
  log "versitygw: $versitygw_image with $bin"
  build "$versitygw_image" "$ctx"; rm -rf "$ctx"
}

# node_context DIR PACKAGE@VERSION: a build context with the package's
# node_modules, installed here, not in the build (fauxqs and Azurite are pure
# JavaScript), without source maps and TypeScript declarations, which
# nothing reads at run time (Azurite's tree: 59,000 files and 361 MB with
# them, 26,000 and 256 MB without).
node_context() {
  local dir=$1 pkg=$2
  npm install --silent --no-audit --no-fund --omit=dev --prefer-offline --prefix "$dir" "$pkg" >/dev/null
  find "$dir/node_modules" -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete
}

# image_node NAME IMAGE PACKAGE@VERSION [CONTEXT]: fauxqs's or Azurite's
# image, from CONTEXT if node_context made it already. Both Containerfiles
# begin with the same Node.js layer, so the second build reuses the first's.
image_node() {
  local name=$1 image=$2 pkg=$3 ctx=${4:-}
  have "$image" && { log "$name: $image exists"; [ -z "$ctx" ] || rm -rf "$ctx"; return; }
  if [ -z "$ctx" ]; then
    ctx=$(mktemp -d)
    log "$name: npm install $pkg (here, not in the build: pure JavaScript)"
    node_context "$ctx" "$pkg"
  fi
  cp "deploy/$name/Containerfile" "$ctx/"
  log "$name: $image"
  build "$image" "$ctx"; rm -rf "$ctx"
}
image_fauxqs() { image_node fauxqs "$fauxqs_image" "fauxqs@$fauxqs_version" "$@"; }
image_azurite() { image_node azurite "$azurite_image" "azurite@$azurite_version" "$@"; }

# node_images: fauxqs's, then Azurite's, whose npm install runs meanwhile.
node_images() {
  local actx="" pid=""
  if ! have "$azurite_image"; then
    actx=$(mktemp -d); log "azurite: npm install azurite@$azurite_version (beside fauxqs's build)"
    node_context "$actx" "azurite@$azurite_version" & pid=$!
  fi
  timed image_fauxqs
  [ -z "$pid" ] || wait "$pid"
  timed image_azurite $actx
}

image_prometheus() {
  have "$prometheus_image" && { log "prometheus: $prometheus_image exists"; return; }
  local bin ctx; bin=$(command -v prometheus || true)
  [ -n "$bin" ] || { log "prometheus: not installed here (apt-get install prometheus)"; return 1; }
  ctx=$(mktemp -d); cp deploy/prometheus/Containerfile "$bin" "$ctx/"
  log "prometheus: $prometheus_image with $bin ($("$bin" --version 2>&1 | head -n1))"
  build "$prometheus_image" "$ctx"; rm -rf "$ctx"
}

# parallel: the images after the base, built concurrently (their builds
# wait mostly on apt's downloads; fauxqs's and Azurite's one after the other,
# to share their Node.js layer); each one's log goes to $cache/logs and is
# shown when it fails.
parallel() {
  local logs=$cache/logs pids=() names=() failed=0 i
  mkdir -p "$logs"
  (timed image_builder && timed image_geoingest) >"$logs/builder+geoingest.log" 2>&1 & pids+=($!); names+=(builder+geoingest)
  node_images >"$logs/fauxqs+azurite.log" 2>&1 & pids+=($!); names+=(fauxqs+azurite)
  for s in postgis versitygw prometheus; do
    timed "image_$s" >"$logs/$s.log" 2>&1 & pids+=($!); names+=("$s")
  done
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then grep '^images: ' "$logs/${names[$i]}.log" >&2 || true
    else failed=1; log "${names[$i]} FAILED:"; tail -n 60 "$logs/${names[$i]}.log" >&2; fi
  done
  return $failed
}

targets=("$@"); [ ${#targets[@]} -eq 0 ] && targets=(all)
for t in "${targets[@]}"; do
  case $t in
    all) timed image_base; parallel ;;
    base|builder|postgis|geoingest|versitygw|fauxqs|azurite|prometheus) timed "image_$t" ;;
    *) echo "images: unknown image $t" >&2; exit 2 ;;
  esac
done
