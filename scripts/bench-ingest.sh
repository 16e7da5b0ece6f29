#!/usr/bin/env bash
# Measures wall time and peak RSS of ingesting N synthetic parcels
# (GeoJSON, GeoJSON sequence, shapefile) with geoingest and with ogr2ogr,
# in the same run, into the same private PostGIS cluster. Prints a
# markdown table. Usage: scripts/bench-ingest.sh [N ...] (default 100000
# 1000000). Needs ../shared/tools/parcelgen (or PARCELGEN_DIR), ogr2ogr
# (gdal-bin) and /usr/bin/time. Uses DATABASE_URL when set (a libpq
# keyword/value string or postgres:// URL that ogr2ogr's PG: driver accepts
# too), otherwise starts the embedded cluster in a fresh GEOINGEST_HOME.
# The PostgreSQL server's own memory is not counted on either side: both
# figures are the client process's peak RSS (/usr/bin/time -v).
# FORMATS picks the formats (default "geojson geojsonl shp"); "kml" is
# KML written by ogr2ogr -f KML from the same parcels (FORMATS=kml
# scripts/bench-ingest.sh 20000 200000: docs/benchmarks.md, KML).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100000 1000000)
work=${BENCH_DIR:-$(mktemp -d /tmp/geoingest-bench-XXXXXX)}
mkdir -p "$work"
chmod 755 "$work"
pgsrc=${PARCELGEN_DIR:-../shared/tools/parcelgen}
command -v ogr2ogr >/dev/null || { echo "bench: ogr2ogr not found (apt-get install gdal-bin)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }

go build -o "$work/geoingest" ./cmd/geoingest
if [ ! -x "$work/parcelgen" ]; then
  cp -r "$pgsrc" "$work/parcelgen-src"
  (cd "$work/parcelgen-src" && GOFLAGS= go build -o "$work/parcelgen" .)
fi
if [ -n "${DATABASE_URL:-}" ]; then
  url=$DATABASE_URL
  pg="PG:$url"
else
  export GEOINGEST_HOME="$work/home"
  mkdir -p "$GEOINGEST_HOME"; chmod 755 "$GEOINGEST_HOME"
  url=$("$work/geoingest" db start || { echo "bench: geoingest db start failed (its message is above)" >&2; exit 1; })
  trap '"$work/geoingest" db stop >/dev/null 2>&1 || true' EXIT
  socket=$(sed -E 's/.*host=([^ ]+).*/\1/' <<<"$url")
  pg="PG:host=$socket user=postgres dbname=geoingest"
fi

# measure LABEL CMD... : runs CMD under /usr/bin/time -v, prints "seconds rss_mb".
measure() {
  local log="$work/time.log"
  /usr/bin/time -v "$@" >"$work/out.log" 2>"$log" || { echo "bench: $* failed:" >&2; tail -5 "$work/out.log" "$log" >&2; exit 1; }
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$log" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$log" | awk '{print $NF}')
  python3 - "$wall" "$rss" <<'PY'
import sys
w, rss = sys.argv[1], int(sys.argv[2])
parts = [float(p) for p in w.split(":")]
secs = parts[-1] + (parts[-2] * 60 if len(parts) > 1 else 0) + (parts[-3] * 3600 if len(parts) > 2 else 0)
print(f"{secs:.1f} {rss/1024:.0f}")
PY
}

echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GB", $2/1048576}' /proc/meminfo) RAM, $(uname -sr); $(ogr2ogr --version); $(go version | cut -d' ' -f3); $(date -u +%Y-%m-%d)"
echo
echo "| parcels | format | input size | geoingest time | geoingest peak RSS | ogr2ogr time | ogr2ogr peak RSS |"
echo "|---:|---|---:|---:|---:|---:|---:|"
for n in "${sizes[@]}"; do
  d="$work/data-$n"
  if [ ! -f "$d/parcels_$n.shp" ]; then
    mkdir -p "$d"
    "$work/parcelgen" -n "$n" -label "$n" -out "$d" >/dev/null
    ogr2ogr -f "ESRI Shapefile" "$d/parcels_$n.shp" "$d/parcels_$n.geojsonl" -nlt MULTIPOLYGON -lco ENCODING=UTF-8
  fi
  for f in ${FORMATS:-geojson geojsonl shp}; do
    file="$d/parcels_$n.$f"
    [ "$f" != kml ] || [ -f "$file" ] || ogr2ogr -f KML "$file" "$d/parcels_$n.geojsonl" -nln parcels
    size=$(du -sh --apparent-size "$file" | cut -f1)
    [ "$f" = shp ] && size="$(du -ch --apparent-size "$d/parcels_$n".{shp,dbf,shx} | tail -1 | cut -f1) (.shp+.dbf+.shx)"
    read -r gt grss < <(measure "$work/geoingest" ingest --json --database-url "$url" --pipeline-version "bench-$n-$f-$$" "$file")
    grep -q '"outcome":"written"' "$work/out.log" || { echo "bench: geoingest did not write $file: $(cat "$work/out.log")" >&2; exit 1; }
    read -r ot orss < <(measure ogr2ogr -f PostgreSQL "$pg" "$file" \
      -nln "bench_${n}_${f}" -overwrite -nlt PROMOTE_TO_MULTI -lco GEOMETRY_NAME=geom -lco SPATIAL_INDEX=GIST)
    echo "| $n | $f | $size | ${gt} s | ${grss} MB | ${ot} s | ${orss} MB |"
  done
done
