#!/usr/bin/env bash
# Times the area reports on N synthetic parcels x 120 admin units (made by
# ../shared/tools/parcelgen -admin), and what the report assignments add to
# ingest. Usage: scripts/bench-report.sh [N] (default 1000000).
#
# It builds geoingest (or times GEOINGEST_BIN, e.g. a build of an older
# commit, for a before/after comparison), starts the embedded cluster in a
# fresh GEOINGEST_HOME under BENCH_DIR (a temporary directory by default),
# and prints one line per measurement:
#   ingest parcels / ingest admin units: wall time of `geoingest ingest`
#     (with this build: the write and then the refresh of the report
#     assignments, whose own time is printed from its log line);
#   report <method> run k: wall time of `geoingest report area --format
#     csv` (the whole process: connect, query, print), three runs each;
#   with this build also: the report with no assignment (computed on the
#     fly, as on a database upgraded in place before its first refresh),
#     and `report refresh` recomputing every assignment from scratch.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
work=${BENCH_DIR:-$(mktemp -d /tmp/geoingest-bench-report-XXXXXX)}
mkdir -p "$work"
# The embedded cluster runs as the postgres OS user when root starts it: it
# must be able to enter the folder (mktemp -d makes it 0700).
chmod 755 "$work"
pgsrc=${PARCELGEN_DIR:-../shared/tools/parcelgen}
bin=${GEOINGEST_BIN:-}
if [ -z "$bin" ]; then
  bin="$work/geoingest"
  go build -o "$bin" ./cmd/geoingest
fi
if [ ! -x "$work/parcelgen" ]; then
  rm -rf "$work/parcelgen-src"
  cp -r "$pgsrc" "$work/parcelgen-src"
  chmod -R u+w "$work/parcelgen-src"
  (cd "$work/parcelgen-src" && GOFLAGS= go build -o "$work/parcelgen" .)
fi
data="$work/data-$n"
if [ ! -f "$data/parcels_$n.geojsonl" ] || [ ! -f "$data/admin.geojson" ]; then
  mkdir -p "$data"
  "$work/parcelgen" -n "$n" -label "$n" -out "$data" -admin >/dev/null
  rm -f "$data/parcels_$n.geojson" "$data/parcels_$n.copy"
fi
export GEOINGEST_HOME="$work/home-$$"
mkdir -p "$GEOINGEST_HOME"
url=$("$bin" db start || { echo "bench: geoingest db start failed (its message is above)" >&2; exit 1; })
trap '"$bin" db stop >/dev/null 2>&1 || true' EXIT
new=false
"$bin" report area --help 2>&1 | grep -q -- -no-refresh && new=true

# secs CMD...: runs CMD, prints its wall time in seconds.
secs() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$work/out.log" 2>"$work/err.log" || { echo "bench: $* failed:" >&2; tail -5 "$work/err.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}
refresh_log() { grep -o 'report assignments refreshed.*' "$work/err.log" | grep -o 'seconds=[0-9.]*' | tail -1 || true; }

echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GB", $2/1048576}' /proc/meminfo) RAM, load $(cut -d' ' -f1-3 /proc/loadavg); $(basename "$bin"); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "ingest parcels ($n): $(secs "$bin" ingest --log-level info --target parcels "$data/parcels_$n.geojsonl") s $(refresh_log)"
echo "ingest admin units (120): $(secs "$bin" ingest --log-level info --target admin_units "$data/admin.geojson") s $(refresh_log)"
psql -q "$url" -c "ANALYZE"
flags=()
$new && flags=(--no-refresh)
for m in point-on-surface intersection; do
  for k in 1 2 3; do
    echo "report $m run $k: $(secs "$bin" report area "${flags[@]}" --method "$m" --format csv) s"
  done
done
if $new; then
  echo "report refresh with nothing to do: $(secs "$bin" report refresh) s"
  psql -q "$url" -c "DELETE FROM report_assignments"
  for m in point-on-surface intersection; do
    echo "report $m with no assignment (computed on the fly): $(secs "$bin" report area --no-refresh --method "$m" --format csv) s"
  done
  echo "report refresh from scratch: $(secs "$bin" report refresh) s ($(cat "$work/out.log"))"
  echo "report point-on-surface after it: $(secs "$bin" report area --no-refresh --format csv) s"
  "$bin" verify | tail -1
fi
