#!/usr/bin/env bash
# The README's second command: installs what the tests need if missing,
# checks formatting, vet, that the sqlc-generated code and the functions'
# schema file are current, then
# runs every test against real servers (a private PostGIS cluster, fauxqs,
# an S3 server) that the tests start themselves, and then the container
# tests (scripts/container-tests.sh: the images, tests on a testcontainers
# PostGIS under podman, the compose stack; required in CI, skipped with a
# notice elsewhere when podman cannot run containers).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
export PATH="$(go env GOPATH)/bin:$PATH"

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1; fi
go vet ./...
# The slim build (no GDAL) compiles, and refuses what only GDAL reads.
go vet -tags geoingest_nogdal ./...
go test -tags geoingest_nogdal ./geomio -run 'TestSlimBuild|TestShapefile'
if ! sqlc diff >/dev/null 2>&1; then
  echo "sqlc-generated code is stale: run 'sqlc generate' and commit the result" >&2
  sqlc diff >&2 || true
  exit 1
fi
# The functions the migrations define, as they are now, checked in
# (migrations/schema/functions.sql): stale when a migration changed one.
go run ./internal/tools/schemafuncs -check
go test -timeout 20m "$@" ./...
scripts/container-tests.sh
