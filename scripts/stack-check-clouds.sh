#!/usr/bin/env bash
# The Google Cloud and Azure compose stacks (deploy/compose/gcp.yml and
# azure.yml), brought up together beside docker-compose.yml's postgis with
# podman-compose (the images of scripts/images.sh, with azurite): one file
# is uploaded to each cloud's emulator with curl, as docs/clouds.md shows,
# and each must land in PostGIS as exactly one current job with its
# features; then the stack is taken down with its volumes. Ports are free
# ones, so it can run beside anything. COMPOSE="docker compose" runs it
# with Docker.
set -euo pipefail
cd "$(dirname "$0")/.."
project=${STACK_PROJECT:-geoingest-clouds}
compose=(${COMPOSE:-podman-compose} -p "$project" -f docker-compose.yml -f deploy/compose/gcp.yml -f deploy/compose/azure.yml)
t0=$SECONDS
say() { echo "clouds stack: $* ($((SECONDS - t0)) s)" >&2; }

free_port() {
  local p=$1
  while [ -n "$(ss -Htln "sport = :$p" 2>/dev/null)" ]; do p=$((p + 1)); done
  echo "$p"
}
export POSTGIS_PORT=$(free_port 25442) STORAGE_PORT=$(free_port 24443) PUBSUB_PORT=$(free_port 28085)
export AZURE_BLOB_PORT=$(free_port 20010) GCP_METRICS_PORT=$(free_port 29465)
export AZURE_METRICS_PORT=$(free_port $((GCP_METRICS_PORT + 1)))

logs() { "${compose[@]}" logs 2>&1 | tail -n 200 >&2 || true; }
down() { "${compose[@]}" down -v >/dev/null 2>&1 || true; }
fail() { echo "clouds stack: FAILED: $*" >&2; "${compose[@]}" ps >&2 || true; logs; down; exit 1; }
trap down EXIT
down # leftovers of an interrupted run

say "up (postgis :$POSTGIS_PORT; Cloud Storage :$STORAGE_PORT, Pub/Sub :$PUBSUB_PORT, serve /metrics :$GCP_METRICS_PORT; Blob via Event Grid stand-in :$AZURE_BLOB_PORT, serve /metrics :$AZURE_METRICS_PORT)"
"${compose[@]}" up -d gcp geoingest-gcp azurite azgrid geoingest-azure >/tmp/geoingest-clouds-up.log 2>&1 ||
  { cat /tmp/geoingest-clouds-up.log >&2; fail "compose up"; }

wait_for() {
  local what=$1 patience=$2; shift 2
  local deadline=$((SECONDS + patience))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "$what: not within $patience s"
    sleep 1
  done
  say "$what"
}
psql_stack() { psql "host=127.0.0.1 port=$POSTGIS_PORT user=geoingest password=geoingest dbname=geoingest" -XAtq -c "$1"; }
wait_for "the Pub/Sub serve is ready (/readyz)" 180 curl -sf "http://127.0.0.1:$GCP_METRICS_PORT/readyz"
wait_for "the Storage Queue serve is ready (/readyz)" 180 curl -sf "http://127.0.0.1:$AZURE_METRICS_PORT/readyz"

file=testdata/synthetic/admin.geojson
gkey="admin/gcp.geojson" akey="admin/azure units.geojson"
curl -sf -X POST --data-binary @"$file" \
  "http://127.0.0.1:$STORAGE_PORT/upload/storage/v1/b/uploads/o?uploadType=media&name=$gkey" >/dev/null || fail "upload to Cloud Storage"
say "uploaded $file as gs://uploads/$gkey"
sas=$("${compose[@]}" exec -T azgrid geoingest-stack sas 2>/dev/null | grep "sig=" | tail -n1 || true)
[[ $sas == *sig=* ]] || fail "geoingest-stack sas printed no signature: $sas"
curl -sf -T "$file" -H 'x-ms-blob-type: BlockBlob' \
  "http://127.0.0.1:$AZURE_BLOB_PORT/devstoreaccount1/uploads/${akey// /%20}?$sas" || fail "upload to Blob Storage"
say "uploaded $file as azblob://devstoreaccount1/uploads/$akey"

landed() { [ "$(psql_stack "SELECT count(*) FROM jobs WHERE status = 'current'")" = 2 ]; }
wait_for "both uploads are current jobs in PostGIS" 120 landed
sleep 2 # any duplicate would have been written by now
got=$(psql_stack "SELECT string_agg(source_key || ': ' || feature_count || ' features', '; ' ORDER BY source_key) FROM jobs")
units=$(psql_stack "SELECT count(*) FROM admin_units")
say "PostGIS: $got; admin_units holds $units rows"
[ "$(psql_stack "SELECT count(*) FROM jobs")" = 2 ] || fail "want exactly two jobs: $got"
[ "$(psql_stack "SELECT string_agg(source_key, ',' ORDER BY source_key) FROM jobs")" = "$akey,$gkey" ] || fail "want the jobs' keys to be $akey and $gkey: $got"
[ "$units" -gt 0 ] && [ "$units" = "$(psql_stack "SELECT sum(feature_count) FROM jobs")" ] || fail "admin_units ($units) and the ledger disagree: $got"
for m in "$GCP_METRICS_PORT" "$AZURE_METRICS_PORT"; do
  curl -sf "http://127.0.0.1:$m/metrics" | grep -E '^geoingest_write_gate_total' >&2 || fail "no write gate metrics on :$m"
done
"${compose[@]}" exec -T geoingest-gcp geoingest verify >&2 || fail "geoingest verify"
say "ok: one upload to each cloud, one job each, its features once"
