#!/usr/bin/env bash
# The chaos suite's long run (docs/chaos.md): versitygw, fauxqs, a private
# PostGIS cluster and several `geoingest serve` processes; 10,000
# deliveries of shuffled duplicate notifications during 10 minutes of
# SIGKILLs, a PostgreSQL restart, stolen leases, and S3 and SQS faults and
# outages through a fault proxy; then the checks. The
# short run of the same test (about a minute) is part of scripts/test.sh.
#
# Usage: scripts/chaos.sh [--deliveries N] [--duration D] [--serves N]
#        [--workers N] [--pgdown D] [--outage D] [--fault-rate P]
#        [--kill-every D] [--seed S] [--logdir DIR] [--failovers N] [--async]
#        [--async-lag D]
#        scripts/chaos.sh --clouds [--seed S] [--logdir DIR]: TestChaosClouds'
#        long run instead (Pub/Sub and Azure Storage Queue emulators, 1,000
#        keys and 5 minutes of chaos each, queue and download faults)
# Defaults: 10000 deliveries, 10m of chaos, 3 serves x 3 workers, PostgreSQL
# down 20s, S3 and SQS each down 30s, each fault kind at 0.02 per request,
# a kill every 3s on average. Prints what it did and found; exit 0
# when every check passed. The output is also kept in $CHAOS_OUT (default
# chaos-<time>.log in the log directory).
set -euo pipefail
cd "$(dirname "$0")/.."
args=(-chaos.long)
logdir=""
test='^TestChaos$'

while [ $# -gt 0 ]; do
  case "$1" in
    --async) args+=(-chaos.async); shift ;;
    --clouds) test='^TestChaosClouds$'; shift ;;
    --deliveries|--duration|--serves|--workers|--pgdown|--outage|--fault-rate|--kill-every|--seed|--failovers|--async-lag)
      [ $# -ge 2 ] || { echo "chaos: $1 needs a value" >&2; exit 2; }
      args+=("-chaos.${1#--}" "$2"); shift 2 ;;
    --logdir)
      [ $# -ge 2 ] || { echo "chaos: $1 needs a value" >&2; exit 2; }
      logdir=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "chaos: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
scripts/setup.sh --test
export PATH="$(go env GOPATH)/bin:$PATH"
logdir=${logdir:-$(mktemp -d /tmp/geoingest-chaos-XXXXXX)}
mkdir -p "$logdir"
out=${CHAOS_OUT:-$logdir/chaos-$(date -u +%Y%m%dT%H%M%SZ).log}
echo "chaos: serve logs in $logdir, output in $out" >&2
set +e
go test ./internal/testsupport/chaos -run "$test" -count=1 -v -timeout 3h -args "${args[@]}" -chaos.logdir "$logdir" 2>&1 | tee "$out"
code=${PIPESTATUS[0]}
exit "$code"
