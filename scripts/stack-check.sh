#!/usr/bin/env bash
# Brings docker-compose.yml's stack up with podman-compose (the images of
# scripts/images.sh), uploads one file to the bucket with curl's SigV4, and
# checks that it lands in PostGIS as exactly one job with its features;
# then takes the stack down with its volumes. Ports are free ones, so it
# can run beside anything. COMPOSE="docker compose" runs it with Docker.
set -euo pipefail
cd "$(dirname "$0")/.."
project=${STACK_PROJECT:-geoingest-check}
compose=(${COMPOSE:-podman-compose} -p "$project" -f docker-compose.yml)
t0=$SECONDS
say() { echo "stack: $* ($((SECONDS - t0)) s)" >&2; }

# free_port BASE: the first port from BASE up that nothing listens on.
free_port() {
  local p=$1
  while [ -n "$(ss -Htln "sport = :$p" 2>/dev/null)" ]; do p=$((p + 1)); done
  echo "$p"
}
export POSTGIS_PORT=$(free_port 25432) S3_PORT=$(free_port 27070) SQS_PORT=$(free_port 24566)
export METRICS_PORT=$(free_port 29464) PROMETHEUS_PORT=$(free_port 29090)

logs() { "${compose[@]}" logs 2>&1 | tail -n 200 >&2 || true; }
down() { "${compose[@]}" down -v >/dev/null 2>&1 || true; }
fail() { echo "stack: FAILED: $*" >&2; "${compose[@]}" ps >&2 || true; logs; down; exit 1; }
trap down EXIT
down # leftovers of an interrupted run

say "up (postgis :$POSTGIS_PORT, S3 :$S3_PORT, SQS :$SQS_PORT, geoingest /metrics :$METRICS_PORT)"
"${compose[@]}" up -d >/tmp/geoingest-stack-up.log 2>&1 || { cat /tmp/geoingest-stack-up.log >&2; fail "compose up"; }

# wait_for WHAT SECONDS CMD...: until CMD succeeds.
wait_for() {
  local what=$1 patience=$2; shift 2
  local deadline=$((SECONDS + patience))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "$what: not within $patience s"
    sleep 1
  done
  say "$what"
}
# curl signs S3 requests itself (SigV4); S3 wants the payload hash header too.
s3() { curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user geoingest:geoingest-secret -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"; }
# psql on this machine, through the published port (compose exec adds its own lines to stdout).
psql_stack() { psql "host=127.0.0.1 port=$POSTGIS_PORT user=geoingest password=geoingest dbname=geoingest" -XAtq -c "$1"; }
wait_for "geoingest serve is ready (/readyz)" 180 curl -sf "http://127.0.0.1:$METRICS_PORT/readyz"
wait_for "the bucket exists (init)" 60 s3 --head "http://127.0.0.1:$S3_PORT/uploads"

file=testdata/synthetic/admin.geojson
key="admin/admin units.geojson"
s3 -T "$file" "http://127.0.0.1:$S3_PORT/uploads/admin/admin%20units.geojson" || fail "upload $file"
say "uploaded $file as s3://uploads/$key"

landed() { [ "$(psql_stack "SELECT count(*) FROM jobs WHERE status = 'current'")" = 1 ]; }
wait_for "the upload is a current job in PostGIS" 120 landed
sleep 2 # any duplicate would have been written by now
got=$(psql_stack "SELECT count(*) || ' job(s), ' || sum(feature_count) || ' features, key ' || string_agg(source_key, ',') FROM jobs")
units=$(psql_stack "SELECT count(*) FROM admin_units")
say "PostGIS: $got; admin_units holds $units rows"
[ "$(psql_stack "SELECT count(*) FROM jobs")" = 1 ] || fail "want exactly one job: $got"
[ "$(psql_stack "SELECT source_key FROM jobs")" = "$key" ] || fail "want the job's key to be $key: $got"
[ "$units" -gt 0 ] && [ "$units" = "$(psql_stack "SELECT feature_count FROM jobs")" ] || fail "admin_units ($units) and the ledger disagree: $got"
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" | grep -E '^geoingest_(events_received_total|write_gate_total)' >&2 || true
"${compose[@]}" exec -T geoingest geoingest verify >&2 || fail "geoingest verify"
scraped() {
  curl -sf "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/query?query=geoingest_events_received_total" | grep -q '"value"' &&
    curl -sf "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/rules" | grep -q GeoingestRejectionPathsSilent
}
wait_for "Prometheus scrapes geoingest and has the alert rules loaded" 60 scraped
say "ok: one upload, one job, its features once"
