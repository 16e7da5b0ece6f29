#!/usr/bin/env bash
# Installs what geoingest and its tests need on a Debian/Ubuntu machine, if
# missing: PostgreSQL + PostGIS (the embedded default and the test helper
# run a private cluster with them), PROJ (libproj-dev to build geoingest's
# cgo, proj-data for its database at run time), GDAL (libgdal-dev: the
# formats read with OGR), and with --test also GDAL's
# command-line tools (gdal-bin: the oracle of the CRS test matrix), promtool (Debian's prometheus package), chromium (the console's
# headless page test), the test servers
# (fauxqs, an SQS-compatible server, and Azurite, Azure Blob and Queue
# emulator, from npm; fake-gcs-server and the Pub/Sub emulator pstest run
# in-process from Go modules; versitygw, an S3 server, with
# go install into $(go env GOPATH)/bin, where the tests look for it; the
# other S3 server, gofakes3, runs in-process) and
# sqlc for the generated-code check. Idempotent: a second run installs
# nothing.
set -euo pipefail

want_test=0
[ "${1:-}" = "--test" ] && want_test=1
# --test also sets up podman for the container tests and the compose stack
# (scripts/images.sh, scripts/stack-check.sh): GEOINGEST_PODMAN=0 leaves it out.
want_podman=$want_test
[ "${GEOINGEST_PODMAN:-1}" = 0 ] && want_podman=0

sudo_cmd() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "setup: need root (or sudo) to run: $*" >&2; exit 1; fi
}

apt_pkgs=()
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)
if [ -z "$pg_bin" ] || ! ls /usr/share/postgresql/*/extension/postgis.control >/dev/null 2>&1; then
  apt_pkgs+=(postgresql-15-postgis-3)
fi
# PROJ: geoingest resolves CRSs with it through cgo (geomio/crs), which
# needs a C compiler too.
if ! command -v gcc >/dev/null && ! command -v cc >/dev/null; then
  apt_pkgs+=(gcc libc6-dev)
fi
if [ ! -f /usr/include/proj.h ] && [ ! -f /usr/local/include/proj.h ]; then
  apt_pkgs+=(libproj-dev)
fi
# GEOS: the write path checks validity with libgeos_c through cgo (the
# library PostGIS's ST_IsValid uses).
if [ ! -f /usr/include/geos_c.h ] && [ ! -f /usr/local/include/geos_c.h ]; then
  apt_pkgs+=(libgeos-dev)
fi
# GDAL: geoingest reads GeoPackage, File Geodatabase, KML, FlatGeobuf,
# GML, MapInfo and CSV with its vector library through cgo (geomio/ogr).
# (A build with -tags geoingest_nogdal needs none of it.)
if [ ! -f /usr/include/gdal/gdal.h ] && [ ! -f /usr/local/include/gdal.h ]; then
  apt_pkgs+=(libgdal-dev)
fi
if [ ! -f /usr/share/proj/proj.db ] && [ ! -f /usr/local/share/proj/proj.db ]; then
  apt_pkgs+=(proj-data)
fi
if [ "$want_test" = 1 ] && { ! command -v ogr2ogr >/dev/null || ! command -v gdalsrsinfo >/dev/null; }; then
  apt_pkgs+=(gdal-bin) # the CRS test matrix's oracle (ingest/crs_matrix_test.go); ogrinfo lists the layers as a GIS client (cmd/geoingest/compact_test.go)
fi
if [ "$want_test" = 1 ] && ! /usr/bin/python3 -c 'import qgis.core' >/dev/null 2>&1; then
  apt_pkgs+=(python3-qgis qgis-providers) # a headless QGIS (3.22) opens the typed views (cmd/geoingest/qgis_test.go)
fi
if [ "$want_test" = 1 ] && ! command -v strace >/dev/null; then
  apt_pkgs+=(strace) # scripts/hostile-audit.sh: every file and connection the hostile corpus makes geoingest open
fi
if [ "$want_test" = 1 ] && ! command -v iptables >/dev/null && ! [ -x /usr/sbin/iptables ]; then
  apt_pkgs+=(iptables) # TestServeLeavesAVanishedPrimary drops the database's packets, as a primary whose machine vanished does
fi
if [ "$want_test" = 1 ] && ! command -v pg_autoctl >/dev/null; then
  apt_pkgs+=(postgresql-15-auto-failover pg-auto-failover-cli) # the HA formation of the failover tests (postgistest/hatest)
fi
if [ "$want_test" = 1 ] && ! command -v npm >/dev/null; then
  apt_pkgs+=(nodejs npm)
fi
if [ "$want_test" = 1 ] && ! command -v promtool >/dev/null; then
  apt_pkgs+=(prometheus) # for promtool: checks and unit-tests the alert rules
fi
if [ "$want_test" = 1 ] && ! command -v chromium >/dev/null; then
  apt_pkgs+=(chromium) # headless, for the console's page test (cmd/geoingest/console_test.go)
fi
if [ "$want_podman" = 1 ]; then
  for p in podman runc debootstrap podman-compose slirp4netns fuse-overlayfs; do
    command -v "$p" >/dev/null || [ -x "/usr/sbin/$p" ] || apt_pkgs+=("$p")
  done
fi
# The test tools that need nothing apt brings install beside it: on a fresh
# machine apt takes minutes (mostly downloading and unpacking), and so do
# these (npm's downloads; the Go tools' compiles, on the CPU apt leaves).
# Each logs to a file of its own, shown if it fails. npm's start after apt
# when apt is what brings npm.
bg_pids=() bg_names=() bg_logs=()
bg() { # NAME CMD...: runs CMD in the background
  local name=$1 log
  shift
  log=$(mktemp)
  "$@" >"$log" 2>&1 &
  bg_pids+=("$!") bg_names+=("$name") bg_logs+=("$log")
}
bg_wait() { # waits for every bg; fails if any did, with its log
  local i rc=0
  for i in "${!bg_pids[@]}"; do
    if ! wait "${bg_pids[$i]}"; then
      echo "setup: ${bg_names[$i]} failed:" >&2
      cat "${bg_logs[$i]}" >&2
      rc=1
    fi
    rm -f "${bg_logs[$i]}"
  done
  bg_pids=() bg_names=() bg_logs=()
  return $rc
}
cache="${GEOINGEST_TEST_CACHE:-$HOME/.cache/geoingest-test}"
npm_done=0
want_fauxqs() { [ ! -x "$cache/node_modules/.bin/fauxqs" ]; }
want_azurite() { ! grep -qs '"version": "3.37.0"' "$cache/node_modules/azurite/package.json"; }
npm_tools() { # fauxqs, then Azurite: one node_modules, one npm at a time
  mkdir -p "$cache"
  if want_fauxqs; then
    npm install --silent --no-audit --no-fund --prefix "$cache" fauxqs@1.9.2 >/dev/null
  fi
  if want_azurite; then
    npm install --silent --no-audit --no-fund --prefix "$cache" azurite@3.37.0 >/dev/null
  fi
}
npm_say() { # what npm_tools is about to install, if anything
  want_fauxqs && echo "setup: installing fauxqs@1.9.2 into $cache$1" >&2
  want_azurite && echo "setup: installing azurite@3.37.0 (Blob and Queue emulator) into $cache$1" >&2
  true
}
if [ "$want_test" = 1 ]; then
  gobin="$(go env GOPATH)/bin"
  if [ ! -x "$gobin/sqlc" ]; then
    echo "setup: installing sqlc v1.31.1 (beside apt)" >&2
    bg sqlc env GOFLAGS= GOBIN="$gobin" go install github.com/sqlc-dev/sqlc/cmd/sqlc@v1.31.1
  fi
  if [ ! -x "$gobin/versitygw" ] && ! command -v versitygw >/dev/null; then
    echo "setup: installing versitygw v1.8.0 into $gobin (beside apt)" >&2
    bg versitygw env GOFLAGS= GOBIN="$gobin" go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
  fi
  if command -v npm >/dev/null; then
    npm_say " (beside apt)"
    bg "npm install" npm_tools
    npm_done=1
  fi
fi
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  echo "setup: installing ${apt_pkgs[*]}" >&2
  sudo_cmd apt-get update -qq
  sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null
fi
if [ "$want_test" = 1 ] && [ "$npm_done" = 0 ]; then
  npm_say ""
  npm_tools # npm came with apt
fi
# Debian's package starts a cluster of its own on port 5432; geoingest does
# not use it (it runs a private cluster on a Unix socket), so leave it be.

# podman's containers get podman's default rlimits (nofile 1048576, and
# nproc), which a process without CAP_SYS_RESOURCE cannot grant: runc then
# fails with "error setting rlimits for ready process: operation not
# permitted". Give containers what this machine allows instead: the hard
# nofile limit, and nproc no higher than the 32768 podman sets for itself.
if [ "$want_podman" = 1 ]; then
  nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=1048576
  nproc=$(ulimit -Hu); { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
  conf=/etc/containers/containers.conf.d/50-geoingest-ulimits.conf
  want="[containers]
default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]"
  if [ "$(cat "$conf" 2>/dev/null)" != "$want" ]; then
    echo "setup: podman: container rlimits nofile=$nofile nproc=$nproc in $conf" >&2
    sudo_cmd mkdir -p "$(dirname "$conf")"
    printf '%s\n' "$want" | sudo_cmd tee "$conf" >/dev/null
  fi
fi

bg_wait
