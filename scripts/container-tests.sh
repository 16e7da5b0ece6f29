#!/usr/bin/env bash
# The container part of the tests (scripts/test.sh runs it beside go test):
#   1. scripts/images.sh builds the images from Debian packages;
#   2. podman's Docker-compatible API (podman system service) serves
#      testcontainers-go, and the store's tests (ingest/store_test.go),
#      postgistest's and one end-to-end serve test run on a PostGIS
#      container;
#   3. scripts/stack-check.sh brings the compose stack up and ingests a file
#      through it; scripts/stack-check-clouds.sh does the same on the Google
#      Cloud and Azure emulator stacks (deploy/compose/gcp.yml, azure.yml).
# In CI (CI=true) or with GEOINGEST_CONTAINERS=1 every step must run and
# pass. Elsewhere, when podman cannot run a container here, it says why and
# skips; GEOINGEST_CONTAINERS=0 skips it always.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${GEOINGEST_CONTAINERS:-auto}
[ "${CI:-}" = true ] && [ "$mode" = auto ] && mode=1
if [ "$mode" = 0 ]; then echo "container tests: skipped (GEOINGEST_CONTAINERS=0)" >&2; exit 0; fi
t0=$SECONDS
step() { echo "=== container tests: $* ($((SECONDS - t0)) s)" >&2; }

skip_or_fail() {
  if [ "$mode" = 1 ]; then echo "container tests: FAILED: $*" >&2; exit 1; fi
  echo "container tests: skipped: $* (GEOINGEST_CONTAINERS=1 makes this an error)" >&2; exit 0
}
[ "$(id -u)" = 0 ] || skip_or_fail "they need root (rootful podman, debootstrap)"
command -v podman >/dev/null || skip_or_fail "podman is not installed (scripts/setup.sh --test installs it)"

step "images"
scripts/images.sh base || skip_or_fail "no base image (debootstrap or podman import failed)"
if ! out=$(podman run --rm --network none localhost/geoingest/debian:bookworm true 2>&1); then
  skip_or_fail "podman cannot run a container here: $out"
fi
scripts/images.sh all
podman images --filter reference='localhost/geoingest/*' --format '{{.Repository}}:{{.Tag}} {{.Size}}' >&2

# podman's Docker API for testcontainers-go, unless one answers already
# (GEOINGEST_PODMAN_SOCK: another path, for a run on a podman store of its
# own, CONTAINERS_STORAGE_CONF, beside another's).
sock=${GEOINGEST_PODMAN_SOCK:-/run/podman/podman.sock}
export DOCKER_HOST=unix://$sock TESTCONTAINERS_RYUK_DISABLED=true
service_pid=
if ! curl -sf --unix-socket "$sock" http://d/_ping >/dev/null 2>&1; then
  mkdir -p "$(dirname "$sock")"
  podman system service --time=0 "unix://$sock" >/tmp/geoingest-podman-service.log 2>&1 &
  service_pid=$!
  trap '[ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null; true' EXIT
  for _ in $(seq 50); do curl -sf --unix-socket "$sock" http://d/_ping >/dev/null 2>&1 && break; sleep 0.2; done
  curl -sf --unix-socket "$sock" http://d/_ping >/dev/null || { cat /tmp/geoingest-podman-service.log >&2; exit 1; }
fi

# With the reaper off, a test binary killed mid-run leaves its container
# behind: remove our PostGIS test containers before and after.
reap() {
  local ids; ids=$(podman ps -aq --filter label=org.testcontainers=true --filter ancestor=localhost/geoingest/postgis:15-3)
  [ -z "$ids" ] || podman rm -f $ids >/dev/null 2>&1 || true
}
reap
trap 'reap; [ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null; true' EXIT

step "tests on a testcontainers PostGIS (podman, $DOCKER_HOST)"
store_tests=$(grep -oE '^func (Test[A-Za-z0-9_]+)' ingest/postgis/store_test.go | cut -d' ' -f2 | paste -sd'|')
log=$(mktemp)
export GEOINGEST_TEST_POSTGIS=container GEOINGEST_POSTGIS_IMAGE=localhost/geoingest/postgis:15-3
# One go test for the three packages: they build and run side by side,
# each with a container of its own. Verbose output goes to $log; the
# containers' start and the tests' results go to the CI log. -vet=off:
# scripts/test.sh's go vet checks these packages.
tests="^($store_tests|TestIngestTwiceWritesOnce|TestNewDBIsFreshAndDropped|TestServeVersitygwEndToEnd)\$"
if go test -vet=off -count=1 -timeout 10m -v -run "$tests" ./ingest/postgis ./postgistest ./cmd/geoingest >"$log" 2>&1; then status=0; else status=$?; fi
grep -E '(🐳|✅|🔔|pgtest:|postgistest:)|^(=== RUN|--- (PASS|FAIL|SKIP)|PASS|FAIL|ok )' "$log" | grep -v '^=== RUN.*/' >&2 || true
if [ "$status" != 0 ]; then tail -n 200 "$log" >&2; echo "container tests: FAILED: go test -run '$tests'" >&2; exit 1; fi
n=$(grep -c '^--- PASS' "$log" || true) want=$(($(tr '|' '\n' <<<"$store_tests" | wc -l) + 3))
[ "$n" -ge "$want" ] || { echo "container tests: FAILED: $n tests passed, want the $want named" >&2; exit 1; }
rm -f "$log"
unset GEOINGEST_TEST_POSTGIS GEOINGEST_POSTGIS_IMAGE

step "the compose stack"
scripts/stack-check.sh
step "the Google Cloud and Azure compose stacks"
scripts/stack-check-clouds.sh
step "done"
