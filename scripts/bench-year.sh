#!/usr/bin/env bash
# A year in production on one database (internal/tools/benchyear): sources
# publishing new versions and being deleted month after month, every
# delivery made 1-3 times, readers throughout, and per month the readers'
# p50/p99 beside a one-table copy, the per-job costs, verify, prune, size,
# dead tuples, partitions and relations. Each new version of a source is
# the last with -change-min to -change-max of its parcels changed (-keyed of
# the sources keyed); the changelog is scored against the simulation's
# truth every month, and the oracle checked at the end. The simulation
# holds every parcel in memory (some 0.4 KB each). docs/benchmarks.md has
# the method.
#
# Usage: scripts/bench-year.sh [benchyear flags]
#   default: 3,000 sources, at most 20M rows, 12 months (hours on 2 cores)
#   quick:   scripts/bench-year.sh -sources 300 -max-rows 1000000 -months 3
#   burst:   add -waves 1 (a month's publications at once, not in 4 weekly waves)
# It starts the embedded cluster in a fresh GEOINGEST_HOME under BENCH_DIR
# (a temporary directory by default) unless DATABASE_URL is set, and
# writes results.csv and plot.png to BENCH_DIR/out.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${BENCH_DIR:-$(mktemp -d /tmp/geoingest-bench-year-XXXXXX)}
mkdir -p "$work"
# The embedded cluster runs as the postgres OS user when root starts it: it
# must be able to enter the folder (mktemp -d makes it 0700).
chmod 755 "$work"
go build -o "$work/geoingest" ./cmd/geoingest
go build -o "$work/benchyear" ./internal/tools/benchyear
if [ -z "${DATABASE_URL:-}" ]; then
  export GEOINGEST_HOME="$work/home"
  mkdir -p "$GEOINGEST_HOME"
  DATABASE_URL=$("$work/geoingest" db start || { echo "bench: geoingest db start failed (its message is above)" >&2; exit 1; })
  export DATABASE_URL
  trap '"$work/geoingest" db stop >/dev/null 2>&1 || true' EXIT
fi
echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GB", $2/1048576}' /proc/meminfo) RAM; $(date -u '+%Y-%m-%d %H:%M UTC')"
"$work/benchyear" -out "$work/out" "$@"
echo "results: $work/out/results.csv, $work/out/plot.png"
