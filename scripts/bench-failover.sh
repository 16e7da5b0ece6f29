#!/usr/bin/env bash
# What replication costs (docs/failover.md, "What a standby costs"): the
# write gate's jobs on a standalone server, on the primary of a
# pg_auto_failover pair with synchronous_commit = local, and with its
# synchronous standby, side by side in one run, as ratios; then jobs/s for
# small jobs with 1, 2 and 4 `serve` processes against the pair.
# Needs pg_auto_failover (scripts/setup.sh --test installs it).
#
# Usage: scripts/bench-failover.sh [BENCHTIME]   (default 20x)
# Env: GEOINGEST_BENCH_N (large job's features, default 20000),
#      GEOINGEST_BENCH_HA_JOBS (small jobs per serve round, default 300).
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${1:-20x}
out=$(go test ./ingest/postgis -run '^$' -bench '^BenchmarkReplication$' -benchtime "$benchtime" -count=1 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -E '^Benchmark|^ok|^FAIL'
echo
echo "$out" | awk '
/^BenchmarkReplication\// {
  split($1, p, "/"); size = p[2]; srv = p[3]; sub(/-[0-9]+$/, "", srv)
  for (i = 2; i <= NF; i++) if ($(i+1) == "jobs/s") js[size "/" srv] = $i
}
END {
  printf "%-6s %12s %16s %10s %18s %18s\n", "jobs", "standalone", "ha-local-commit", "ha-sync", "sync/local-commit", "sync/standalone"
  split("small large", sizes, " ")
  for (k = 1; k <= 2; k++) {
    s = sizes[k]; a = js[s "/standalone"]; l = js[s "/ha-local-commit"]; y = js[s "/ha-sync"]
    if (a == "" || l == "" || y == "") continue
    printf "%-6s %10.1f/s %14.1f/s %8.1f/s %18.2f %18.2f\n", s, a, l, y, y / l, y / a
  }
}'
echo
GEOINGEST_BENCH_HA=1 go test ./cmd/geoingest -run '^TestServeThroughputHA$' -count=1 -v -timeout 1h 2>&1 | grep -E 'throughput:|^(ok|FAIL|---)'
