#!/usr/bin/env bash
# Small-job throughput of `geoingest serve` on each cloud's emulator stack,
# side by side: SQS (fauxqs + gofakes3), Pub/Sub (pstest + fake-gcs-server,
# with its own notifications), Azure Storage Queue (Azurite + the Event Grid
# stand-in). N one-parcel GeoJSON uploads each (default 500), 4 workers, a
# fresh database per cloud. Prints one line per cloud.
#
#   scripts/bench-clouds.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-500}"
GEOINGEST_BENCH_CLOUDS="$n" go test -count=1 -timeout 60m -run '^TestBenchCloudsSmallJobs$' -v ./cmd/geoingest 2>&1 |
  grep -E 'BENCH|^(--- )?FAIL|^ok' | sed 's/^ *bench_clouds_test.go:[0-9]*: //'
