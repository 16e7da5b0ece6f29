#!/bin/sh
# binaries.sh OUT [GO BUILD FLAGS...]: builds what geoingest's images ship
# into OUT: geoingest (cgo: PROJ, GEOS, GDAL), its slim build (-tags
# geoingest_nogdal: no GDAL) and geoingest-stack (the compose stack's init
# and notification bridge, deploy/stack). One recipe for both ways of
# building the images: the Dockerfile's build stage runs it (with
# -trimpath), and scripts/images.sh runs it on the host (without, so that
# the packages go vet and go test compiled there are reused) and passes the
# result to the same Dockerfile's runtime stages (BINARIES=prebuilt).
set -eu
out=$1; shift
# GOFLAGS is added to, not replaced: scripts/test.sh's (-gcflags) make
# these builds reuse the packages its go test compiled.
export CGO_ENABLED=1 GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false"
go build "$@" -ldflags='-s -w' -o "$out/geoingest" ./cmd/geoingest
go build "$@" -tags geoingest_nogdal -ldflags='-s -w' -o "$out/geoingest-slim" ./cmd/geoingest
go build "$@" -ldflags='-s -w' -o "$out/geoingest-stack" ./deploy/stack
