#!/usr/bin/env bash
# The README's second command: installs what the tests need if missing,
# checks formatting, then runs (beside go test) go vet, the slim build's
# checks and that the sqlc-generated code and the functions' schema file
# are current, and
# runs every test against real servers (a private PostGIS cluster, fauxqs,
# an S3 server) that the tests start themselves, and then the container
# tests (scripts/container-tests.sh: the images, tests on a testcontainers
# PostGIS under podman, the compose stack; required in CI, skipped with a
# notice elsewhere when podman cannot run containers).
#
# The container tests run beside go test from the start: they spend most of
# their time waiting (on a fresh machine, on the debootstrap and the image
# builds' downloads; then on containers starting and the stacks' health
# checks), and so does much of go test. geoingest's binaries, built on
# this machine for its image at a lower CPU priority, reuse the packages go
# test compiled. Their log is shown when go test has ended, and either
# failing fails the run.
# GEOINGEST_CONTAINERS_AFTER=1 runs them after go test.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
# Every package is compiled without DWARF: go test links its binaries
# without it (-s -w) anyway, so the compiler's DWARF would be written to the
# build cache and never read. Compiling and linking every test binary from
# an empty cache took 362 s of CPU with it and 300 s without (load 4-5).
# Every go command below inherits it (go vet, go run, the tests' own go
# build of geoingest, the images' binaries), so they reuse what go test
# compiled; a go command run by hand outside this script compiles its own.
if command -v go >/dev/null; then export GOFLAGS="$(go env GOFLAGS) -gcflags=all=-dwarf=false"; fi
# The modules download beside setup.sh (on a fresh machine, minutes of
# apt), and then the dependencies that need nothing apt brings (every
# package of another module that is not cgo: the cloud SDKs, pgx,
# testcontainers...) compile into the build cache, with the flags go test
# uses, so that go test finds them compiled. A package that cannot compile
# yet (it needs a C library apt has not installed) is left to go test;
# nothing here is fatal: go test compiles and fetches what is missing, and
# says why.
pre_pid=
if command -v go >/dev/null; then
  (
    go mod download >/dev/null 2>&1 || exit 0
    renice -n 5 -p "$BASHPID" >/dev/null 2>&1 || true
    go build $(go list -deps -test -f '{{if and (not .Standard) .Module (not .Module.Main) (not .CgoFiles) (not .ForTest)}}{{.ImportPath}}{{end}}' ./... 2>/dev/null) >/dev/null 2>&1 || true
  ) &
  pre_pid=$!
fi
scripts/setup.sh --test
export PATH="$(go env GOPATH)/bin:$PATH"
[ -z "$pre_pid" ] || wait "$pre_pid" || true

containers_pid= containers_log= azurite_pid= azurite_log= gotest_log=
cleanup() {
  if [ -n "$containers_pid" ]; then kill -TERM -- "-$containers_pid" 2>/dev/null || true; wait "$containers_pid" 2>/dev/null || true; fi
  if [ -n "$azurite_pid" ]; then kill -KILL -- "-$azurite_pid" 2>/dev/null || true; wait "$azurite_pid" 2>/dev/null || true; fi
  rm -f "$containers_log" "$azurite_log" "$gotest_log"
}
trap cleanup EXIT

# One Azurite for every test binary (testsrv.AzuriteEnv), started now,
# while go test compiles: Node.js's start of Azurite took 54 s to over 3
# min on a loaded 2-core VM, and four packages each started their own as
# their tests ran. Its ports are below the kernel's ephemeral range (which
# the tests' own servers draw from) and checked free. Without node or the
# package, each test binary starts its own as before.
azcli="${GEOINGEST_TEST_CACHE:-$HOME/.cache/geoingest-test}/node_modules/azurite/dist/src/azurite.js"
if [ -z "${GEOINGEST_TEST_AZURITE:-}" ] && [ -f "$azcli" ] && command -v node >/dev/null; then
  ports=()
  while [ ${#ports[@]} -lt 3 ]; do
    p=$((21000 + RANDOM % 3000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && [[ " ${ports[*]} " != *" $p "* ]]; then ports+=("$p"); fi
  done
  azurite_log=$(mktemp)
  set -m
  node "$azcli" --inMemoryPersistence --skipApiVersionCheck --loose --disableProductStyleUrl \
    --blobHost 127.0.0.1 --queueHost 127.0.0.1 --tableHost 127.0.0.1 \
    --blobPort "${ports[0]}" --queuePort "${ports[1]}" --tablePort "${ports[2]}" >"$azurite_log" 2>&1 &
  azurite_pid=$!
  set +m
  export GEOINGEST_TEST_AZURITE="http://127.0.0.1:${ports[0]}/devstoreaccount1 http://127.0.0.1:${ports[1]}/devstoreaccount1"
  echo "=== Azurite for the tests: starting on ports ${ports[*]} ($((SECONDS - t0)) s)" >&2
fi

if [ "${GEOINGEST_CONTAINERS_AFTER:-0}" != 1 ]; then
  containers_log=$(mktemp)
  # Its own process group (set -m), so that an early exit stops all of it;
  # its EXIT trap then takes down what it started.
  set -m
  scripts/container-tests.sh >"$containers_log" 2>&1 &
  containers_pid=$!
  set +m
  echo "=== container tests: started beside the rest ($((SECONDS - t0)) s; log shown at the end)" >&2
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1; fi
# go vet and the other checks run beside go test, not ahead of it: go
# test's longest package is the run's critical path, and its tests mostly
# wait. They run at a lower CPU priority, in the CPU go test leaves: go test
# compiles the packages first (on a fresh machine, every dependency) and
# go vet then reuses them, adding only its analyses (of every dependency
# too: its facts). Their output is shown when go test has ended, and a
# failure fails the run.
checks_log=$(mktemp)
(
  set -e
  renice -n 10 -p "$BASHPID" >/dev/null 2>&1 || true
  go vet ./...
  echo "=== go vet: done ($((SECONDS - t0)) s)"
  # The slim build (no GDAL) compiles, and refuses what only GDAL reads.
  go vet -tags geoingest_nogdal ./...
  go test -vet=off -tags geoingest_nogdal ./geomio ./geomio/shapefile -run 'TestSlimBuild|TestShapefile'
  if ! sqlc diff >/dev/null 2>&1; then
    echo "sqlc-generated code is stale: run 'sqlc generate' and commit the result" >&2
    sqlc diff >&2 || true
    exit 1
  fi
  # The functions the migrations define, as they are now, checked in
  # (migrations/schema/functions.sql): stale when a migration changed one.
  go run ./internal/tools/schemafuncs -check
) >"$checks_log" 2>&1 &
checks_pid=$!
echo "=== go test ($((SECONDS - t0)) s)" >&2
# go test runs -p packages at a time, starting them in the order given:
# the three longest first (minutes each, mostly waiting), so that the
# short ones fill in beside them rather than ahead of them, and no long
# package starts last. -p 3 (the default is GOMAXPROCS, 2 here): the three
# run at once, since their tests mostly wait. -vet=off: go vet ./... beside
# runs every check go test's own vet would (and more), on the same
# packages and their tests; go test's vet, whose narrower set of checks is
# another cache key, would analyse every dependency (std included) again.
# -timeout 70m: a package's whole run, short of CI's 90 min so that a
# hung package still prints its goroutines. ingest/postgis and
# cmd/geoingest take 4-7 min on a warm machine, and 33-35 min on a VM
# whose every new page and process costs 10-20x (load 24-33, the images
# building beside them). A binary killed by its
# timeout runs no cleanup; internal/testsupport/reaper then stops the
# clusters its tests started.
status=0
gotest_log=$(mktemp)
go test -p 3 -vet=off -timeout 70m "$@" ./cmd/geoingest ./ingest/postgis ./internal/testsupport/chaos ./... 2>&1 | tee "$gotest_log" || status=${PIPESTATUS[0]}
echo "=== go test: exit $status ($((SECONDS - t0)) s)" >&2
kstatus=0
wait "$checks_pid" || kstatus=$?
echo "=== go vet, the slim build, sqlc and schema checks (run beside go test): exit $kstatus" >&2
cat "$checks_log" >&2; rm -f "$checks_log"
[ "$kstatus" = 0 ] || status=$kstatus
cstatus=0
if [ -n "$containers_pid" ]; then
  wait "$containers_pid" || cstatus=$?
  containers_pid=
  echo "=== container tests (run beside go test): exit $cstatus ($((SECONDS - t0)) s)" >&2
  cat "$containers_log" >&2
else
  scripts/container-tests.sh || cstatus=$?
fi
# A test that failed beside the rest runs again, alone, once: on a loaded
# VM (load 30-48, a process start 7 ms, a first touch of 1 GiB 4 s), seven
# of eight full runs each had one to four tests fail, 15
# different tests in all (one twice, each time for another reason). The
# run again is at low load, after the container tests.
# A test that fails again fails the run; a test that passes alone is
# named below as flaky (its first failure is printed above), to be fixed.
# Nothing is run again when the checks failed, when a package failed
# without a failing test (a build failure, a panic outside a test, the
# timeout), or when more than 6 tests failed (not load: something broke).
if [ "$status" != 0 ] && [ "$kstatus" = 0 ] && [ "$cstatus" = 0 ] && [ -z "${GEOINGEST_NO_RERUN:-}" ]; then
  plan=$(awk '
    /^--- FAIL: / { pending = pending (pending == "" ? "" : "|") $3; n++; next }
    /^FAIL\t/ {
      if ($0 ~ /\[(build|setup) failed\]/ || pending == "") { bad = 1 }
      else { print $2, "^(" pending ")$" }
      pending = ""; next
    }
    /^ok  \t/ { pending = "" }
    END { if (bad || n == 0 || n > 6) print "none" }
  ' "$gotest_log")
  if printf '%s\n' "$plan" | grep -qx none; then
    echo "=== go test failed in a way a second run would not settle: not run again" >&2
  else
    echo "=== go test: running each failed test again, alone, once:" >&2
    printf '%s\n' "$plan" >&2
    status=0
    flaky=
    while read -r pkg pattern; do
      if go test -p 1 -vet=off -timeout 30m "$@" -run "$pattern" "$pkg"; then
        flaky="$flaky $pkg $pattern;"
      else
        status=1
      fi
    done <<<"$plan"
    if [ "$status" = 0 ]; then
      echo "=== FLAKY: these failed beside the rest and passed alone:$flaky ($((SECONDS - t0)) s)" >&2
    else
      echo "=== a failed test failed again alone ($((SECONDS - t0)) s)" >&2
    fi
  fi
fi
rm -f "$gotest_log"
echo "=== done: go test exit $status, container tests exit $cstatus ($((SECONDS - t0)) s)" >&2
[ "$status" = 0 ] && [ "$cstatus" = 0 ]
