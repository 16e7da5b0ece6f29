#!/usr/bin/env bash
# Measures geoingest's write gate against ogr2ogr and against a raw COPY of
# the same rows into the same table, side by side in one run, for several
# rounds; prints each round and the medians, and the ratios per round.
#
#   scripts/bench-write-gate.sh [CASE ...]
#
# Cases (default: append fresh replace small):
#   append   append APPEND_N parcels (shapefile, GeoJSON) to a parcels table
#            of BASE_N with its indexes. geoingest: `geoingest ingest` (a new
#            job); ogr2ogr: --config PG_USE_COPY YES -append into its own
#            table of BASE_N with a GiST index; raw COPY: psql \copy (binary)
#            of geoingest's own rows of the round into the partition that
#            holds the BASE_N rows, with its GiST index.
#   fresh    a fresh load of BASE_N parcels (shapefile, GeoJSON) into an empty
#            database. raw COPY limit: binary \copy of geoingest's rows into
#            an empty table shaped like parcels, then the GiST build.
#   replace  a new version of a BASE_N-feature source (GeoJSON) replacing the
#            current generation, against the fresh load of the same file.
#   formats  a fresh load of FORMATS_N (default BASE_N) parcels from a
#            GeoPackage and from a FlatGeobuf (made from the same data with
#            ogr2ogr) into an empty database: geoingest (GDAL's OGR through
#            cgo) against ogr2ogr --config PG_USE_COPY YES, and the raw COPY
#            limit as in fresh. Prints the load average of each round. Not
#            in the default cases.
#   diff     a new version of a BASE_N-feature keyed source (--key parcel_id)
#            with DIFF_PCT % of its features changed (an attribute; for a
#            fifth of them a vertex too), GeoJSON lines and shapefile: the
#            write of only what changed (the default, with the raw-bytes prefilter;
#            GEOINGEST_PREFILTER=0 measures without it) against a full replace
#            of the same version (GEOINGEST_FULL_REPLACE=1) and a fresh load
#            of it into an empty database (the floor of any full replace),
#            and the floor of reading the file once (geoingest inspect); the
#            diff's client CPU is the floor of reading and hashing it. Prints peak RSS. DIFF_PCT ("1 100": each
#            in turn, in one run). DIFF_FORMATS ("geojsonl shp"): the formats.
#            DIFF_COMPARE=0: the new version's write and its RSS only (no
#            full replace, fresh load or inspect), for sizes where those
#            take many minutes (5M). Not in the default cases.
#   typed    a fresh load of BASE_N parcels (GeoJSON lines, and a shapefile
#            made from them by ogr2ogr) with 21 fields, 20 of them mapped by
#            a typed schema to 20 stored columns (9 text, 4 int8, 3 numeric,
#            2 boolean, a date, a timestamptz; one field left to extras).
#            geoingest: `schema apply`, then `ingest --schema --mapping`
#            (the shapefile's mapping reads its laundered names and
#            ogr2ogr's date-time text); ogr2ogr: --config PG_USE_COPY YES
#            into the columns it types from the same file (String,
#            Integer(64), Real, Boolean, Date, DateTime); raw COPY limit:
#            binary \copy of geoingest's rows with their typed columns into
#            an empty table shaped like the typed feature table, then the
#            GiST build. TYPED_FORMATS ("geojsonl shp"). Not in the default
#            cases.
#   small    SMALL_JOBS small GeoJSON files (1-3 parcels each) in an inbox,
#            served by 1, 2, 4 and 8 `geoingest serve --inbox` processes
#            (PROCS) on one fresh database: every process delivers every
#            file, so all but one delivery of each are duplicates, stopped
#            at the claim gate. Prints committed jobs per second.
#
# Environment: ROUNDS (3), BASE_N (1000000), APPEND_N (100000), SMALL_JOBS
# (10000), SMALL_POLL (2s: the inbox's poll interval; each poll walks
# and stats the whole inbox, so a short one measures the walk), PROCS
# ("1 2 4 8"), RSS_BY_MAPPING (set: after fresh's and formats' rounds, one
# more untimed run of each side under internal/tools/rssmap, which prints the
# peak's resident memory by mapping), GEOINGEST_BIN (a geoingest binary to
# measure instead of one built from this tree: another commit's, to compare
# in one session), BENCH_DIR (a new temporary directory; data
# is generated once there and reused), PARCELGEN_DIR
# (../shared/tools/parcelgen). Needs ogr2ogr (gdal-bin), psql and
# /usr/bin/time. Uses the embedded cluster in $BENCH_DIR/home.
# Times are wall clock of the whole client command; CPU is the client's
# user+system time plus the server's: the CPU of the PostgreSQL backends
# that ended meanwhile (the command's connections; read from the
# postmaster's reaped children in /proc), which, unlike wall time, a busy
# shared machine hardly moves. Peak RSS is the client process's (the
# server's memory is not counted on either side).
set -euo pipefail
cd "$(dirname "$0")/.."
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(append fresh replace small)
rounds=${ROUNDS:-3}
base_n=${BASE_N:-1000000}
append_n=${APPEND_N:-100000}
small_jobs=${SMALL_JOBS:-10000}
small_poll=${SMALL_POLL:-2s}
procs=${PROCS:-1 2 4 8}
work=${BENCH_DIR:-$(mktemp -d /tmp/geoingest-wgbench-XXXXXX)}
mkdir -p "$work"
chmod 755 "$work"
pgsrc=${PARCELGEN_DIR:-../shared/tools/parcelgen}
for c in ogr2ogr psql; do command -v $c >/dev/null || { echo "bench: $c not found" >&2; exit 1; }; done
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }

# The binary is built, then installed by a copy, as a package or an image
# layer puts it on disk, like ogr2ogr's: Linux maps a whole page-cache
# folio on a fault in it, and the file the linker has just written sits in
# the page cache in folios of up to 2 MB, which adds some 10 MB of its
# pages to the process's RSS (docs/benchmarks.md, "Memory").
# The copy has a name of this run's own: a GEOINGEST_BIN named like it
# was left in place, and the run measured the binary before it.
installbin() {
  cp "$1" "$work/.geoingest.$$" && mv -f "$work/.geoingest.$$" "$work/geoingest" ||
    { echo "bench: cannot install $1 as $work/geoingest" >&2; exit 1; }
}
if [ -n "${GEOINGEST_BIN:-}" ]; then
  installbin "$GEOINGEST_BIN"
else
  go build -o "$work/geoingest.built" ./cmd/geoingest
  installbin "$work/geoingest.built"
fi
[ -z "${RSS_BY_MAPPING:-}" ] || go build -o "$work/rssmap" ./internal/tools/rssmap
if [ ! -x "$work/parcelgen" ]; then
  rm -rf "$work/parcelgen-src"
  cp -r "$pgsrc" "$work/parcelgen-src"
  (cd "$work/parcelgen-src" && GOFLAGS= go build -o "$work/parcelgen" .)
fi
export GEOINGEST_HOME="$work/home"
mkdir -p "$GEOINGEST_HOME"
chmod 755 "$GEOINGEST_HOME"
url0=$("$work/geoingest" db start || { echo "bench: geoingest db start failed (its message is above)" >&2; exit 1; })
trap '"$work/geoingest" db stop >/dev/null 2>&1 || true' EXIT
socket=$(sed -E 's/.*host=([^ ]+).*/\1/' <<<"$url0")
dburl() { echo "host=$socket user=postgres dbname=$1 sslmode=disable"; }
psqlcmd=(psql -X -q -v ON_ERROR_STOP=1 -At)
sql() { local db=$1; shift; "${psqlcmd[@]}" "$(dburl "$db")" "$@"; }
freshdb() {
  sql postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1"
  "$work/geoingest" migrate --database-url "$(dburl "$1")" >/dev/null 2>&1
}

# data N: generates parcels_N.{geojson,geojsonl,shp} once.
data() {
  local n=$1 d="$work/data-$1"
  if [ ! -f "$d/parcels_$n.shp" ]; then
    mkdir -p "$d"
    "$work/parcelgen" -n "$n" -label "$n" -out "$d" >/dev/null
    rm -f "$d/parcels_$n.copy"
    ogr2ogr -f "ESRI Shapefile" "$d/parcels_$n.shp" "$d/parcels_$n.geojsonl" -nlt MULTIPOLYGON -lco ENCODING=UTF-8 2>/dev/null
  fi
  echo "$d"
}

# servercpu: CPU seconds of the cluster's ended backends so far.
pm=$(head -1 "$GEOINGEST_HOME/pgdata/postmaster.pid")
servercpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%.2f", ($16 + $17) / t}' "/proc/$pm/stat"; }
# timed CMD...: runs CMD under /usr/bin/time; sets T (wall seconds), RSS
# (MB), CPU (client + server CPU seconds), CCPU and SCPU (each alone).
# Every command starts on a settled cluster: a CHECKPOINT first writes out
# what the command before it left dirty, which would otherwise be written
# during this one (and charged to whichever tool came next).
timed() {
  local s0 s1 u sy
  "${psqlcmd[@]}" "$(dburl postgres)" -c CHECKPOINT
  sleep 0.5; s0=$(servercpu)
  /usr/bin/time -f "%e %M %U %S" -o "$work/time.out" "$@" >"$work/out.log" 2>"$work/err.log" ||
    { echo "bench: $* failed:" >&2; tail -n 5 "$work/out.log" "$work/err.log" >&2; exit 1; }
  sleep 0.5; s1=$(servercpu)
  read -r T RSS u sy < "$work/time.out"
  RSS=$((RSS / 1024))
  CPU=$(awk -v a="$u" -v b="$sy" -v c="$s0" -v d="$s1" 'BEGIN {printf "%.2f", a + b + d - c}')
  CCPU=$(awk -v a="$u" -v b="$sy" 'BEGIN {printf "%.2f", a + b}')
  SCPU=$(awk -v c="$s0" -v d="$s1" 'BEGIN {printf "%.2f", d - c}')
}
ingest() { # DB FILE VERSION [FLAG...]
  local db=$1 file=$2 v=$3
  shift 3
  timed "$work/geoingest" ingest --json --database-url "$(dburl "$db")" --pipeline-version "$v" "$@" "$file"
  grep -q '"outcome":"written"' "$work/out.log" || { echo "bench: geoingest did not write $2: $(cat "$work/out.log")" >&2; exit 1; }
  JOB=$(sed -E 's/.*"job_id":"([0-9a-f]+)".*/\1/' "$work/out.log")
}
ogr() { # DB FILE TABLE MODE(-append|-overwrite)
  timed ogr2ogr --config PG_USE_COPY YES -f PostgreSQL "PG:$(dburl "$1")" "$2" -nln "$3" "$4" \
    -nlt PROMOTE_TO_MULTI -lco GEOMETRY_NAME=geom -lco SPATIAL_INDEX=GIST
}
# rowcols DB: the columns of parcels that a raw COPY of geoingest's rows
# fills: area_m2 too when the schema stores it as data (0007) rather than
# generating it (0005), so that the raw COPY writes the same rows.
rowcols() {
  local g
  g=$(sql "$1" -c "SELECT attgenerated FROM pg_attribute WHERE attrelid = 'parcels'::regclass AND attname = 'area_m2'")
  if [ -z "$g" ]; then echo "job_ref, feature_index, layer, properties, geom, area_m2"; else echo "job_ref, feature_index, layer, properties, geom"; fi
}
# ftable DB: the partitioned parcels table a raw COPY writes: in the
# storage schema from migration 0014 on (parcels is then a view of it).
ftable() { sql "$1" -c "SELECT coalesce(to_regclass('geoingest_store.parcels')::text, 'parcels')"; }
# dumprows DB JOB FILE [REF]: geoingest's rows of JOB as binary COPY data
# (the columns rowcols names), with job_ref replaced by REF when given.
dumprows() {
  local ref=${4:-j.job_ref} extra=""
  case $(rowcols "$1") in *area_m2) extra=", f.area_m2" ;; esac
  sql "$1" -c "\\copy (SELECT $ref, f.feature_index, f.layer, f.properties, f.geom$extra FROM geoingest_features f JOIN jobs j ON j.job_ref = f.job_ref AND j.target_table = f.target_table WHERE j.job_id = '$2') TO '$3' (FORMAT binary)"
}
# bymapping LABEL CMD...: runs CMD once more, untimed, under rssmap, and
# prints where its resident memory is at its peak (RSS_BY_MAPPING=1).
bymapping() {
  local label=$1; shift
  "${psqlcmd[@]}" "$(dburl postgres)" -c CHECKPOINT
  echo
  echo "Peak RSS by mapping: $label"
  echo
  echo '```'
  "$work/rssmap" -- "$@"
  echo '```'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }

echo "# bench-write-gate: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty')${GEOINGEST_BIN:+ (measuring $GEOINGEST_BIN)}, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(awk '/MemTotal/ {printf "%.1f GB", $2/1048576}' /proc/meminfo) RAM, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg); $(ogr2ogr --version | cut -d, -f1); $(psql -V | cut -d' ' -f3- ); $(go version | cut -d' ' -f3)"
echo "# rounds $rounds, base $base_n, append $append_n"

# summary LABEL FILE: FILE has one line per round:
# "geo ogr raw geoRSS ogrRSS geoCPU ogrCPU rawCPU".
summary() {
  local label=$1 f=$2 col
  col() { cut -d' ' -f"$1" "$f" | median; }
  local per='{printf "%s%.2f", (NR>1?" ":""), $a/$b}'
  echo "| $label | $(col 1) s | $(col 2) s | $(col 3) s | $(ratio "$(col 1)" "$(col 3)") ($(awk -v a=1 -v b=3 "$per" "$f")) | $(ratio "$(col 1)" "$(col 2)") ($(awk -v a=1 -v b=2 "$per" "$f")) | $(col 6) / $(col 7) / $(col 8) s | $(ratio "$(col 6)" "$(col 8)") / $(ratio "$(col 6)" "$(col 7)") | $(col 4) MB | $(col 5) MB |"
}
header() {
  echo
  echo "$1"
  echo
  echo "| case | geoingest wall | ogr2ogr wall | raw COPY wall | geoingest / raw COPY, wall (of medians; per round) | geoingest / ogr2ogr, wall (of medians; per round) | CPU: geoingest / ogr2ogr / raw COPY | CPU ratio: geoingest / raw COPY, / ogr2ogr | geoingest peak RSS | ogr2ogr peak RSS |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
}

for c in "${cases[@]}"; do
case $c in
append)
  bd=$(data "$base_n"); ad=$(data "$append_n")
  freshdb bench_append
  ingest bench_append "$bd/parcels_$base_n.geojsonl" base
  baseref=$(sql bench_append -c "SELECT job_ref FROM jobs WHERE job_id = '$JOB'")
  ogr bench_append "$bd/parcels_$base_n.geojsonl" ogr_parcels -overwrite
  header "Append $append_n parcels to a table of $base_n (raw COPY: into the $base_n-row partition, with its GiST index)"
  for f in shp geojson; do
    : > "$work/append-$f.txt"
    for r in $(seq "$rounds"); do
      ingest bench_append "$ad/parcels_$append_n.$f" "append-$f-$r"; gt=$T; gm=$RSS; gc=$CPU; gcs="client $CCPU + server $SCPU"
      dumprows bench_append "$JOB" "$work/rows.bin" "$baseref"
      ogr bench_append "$ad/parcels_$append_n.$f" ogr_parcels -append; ot=$T; om=$RSS; oc=$CPU
      timed "${psqlcmd[@]}" "$(dburl bench_append)" -c "\\copy $(ftable bench_append) ($(rowcols bench_append)) FROM '$work/rows.bin' (FORMAT binary)"; rt=$T; rc=$CPU
      echo "$gt $ot $rt $gm $om $gc $oc $rc" >> "$work/append-$f.txt"
      echo "#   append $f round $r: geoingest ${gt} s (${gm} MB, ${gc} s CPU: ${gcs}), ogr2ogr ${ot} s (${om} MB, ${oc} s CPU), raw COPY ${rt} s (${rc} s CPU)" >&2
    done
    summary "append $append_n ($f)" "$work/append-$f.txt"
  done
  ;;
fresh)
  bd=$(data "$base_n")
  header "Fresh load of $base_n parcels into an empty database (raw COPY limit: binary COPY into an empty table shaped like parcels, then the GiST build)"
  for f in shp geojson; do
    : > "$work/fresh-$f.txt"
    for r in $(seq "$rounds"); do
      freshdb bench_fresh
      ingest bench_fresh "$bd/parcels_$base_n.$f" "fresh-$f-$r"; gt=$T; gm=$RSS; gc=$CPU; gcs="client $CCPU + server $SCPU"
      dumprows bench_fresh "$JOB" "$work/rows.bin"
      freshdb bench_fresh
      ogr bench_fresh "$bd/parcels_$base_n.$f" ogr_parcels -overwrite; ot=$T; om=$RSS; oc=$CPU
      freshdb bench_fresh
      timed "${psqlcmd[@]}" "$(dburl bench_fresh)" -c "CREATE TABLE raw (LIKE $(ftable bench_fresh) INCLUDING DEFAULTS INCLUDING GENERATED)" \
        -c "\\copy raw ($(rowcols bench_fresh)) FROM '$work/rows.bin' (FORMAT binary)" \
        -c "CREATE INDEX ON raw USING gist (geom)"; rt=$T; rc=$CPU
      echo "$gt $ot $rt $gm $om $gc $oc $rc" >> "$work/fresh-$f.txt"
      echo "#   fresh $f round $r: geoingest ${gt} s (${gm} MB, ${gc} s CPU: ${gcs}), ogr2ogr ${ot} s (${om} MB, ${oc} s CPU), raw COPY + GiST ${rt} s (${rc} s CPU)" >&2
    done
    summary "fresh $base_n ($f)" "$work/fresh-$f.txt"
  done
  if [ -n "${RSS_BY_MAPPING:-}" ]; then
    for f in shp geojson; do
      freshdb bench_fresh
      bymapping "geoingest, $f" "$work/geoingest" ingest --json --database-url "$(dburl bench_fresh)" --pipeline-version "fresh-$f-map" "$bd/parcels_$base_n.$f"
      freshdb bench_fresh
      bymapping "ogr2ogr, $f" ogr2ogr --config PG_USE_COPY YES -f PostgreSQL "PG:$(dburl bench_fresh)" "$bd/parcels_$base_n.$f" -nln ogr_parcels -overwrite \
        -nlt PROMOTE_TO_MULTI -lco GEOMETRY_NAME=geom -lco SPATIAL_INDEX=GIST
    done
  fi
  ;;
replace)
  bd=$(data "$base_n")
  src="$work/replace/parcels.geojsonl"
  mkdir -p "$work/replace"
  version() { # V: a version of the source that differs from the others in one property
    sed "1s/\"parcel_id\":\"/\"parcel_id\":\"v$1-/" "$bd/parcels_$base_n.geojsonl" > "$src"
  }
  echo
  echo "Replacing a $base_n-feature generation (GeoJSON lines) with a new version, against a fresh load of that version"
  echo
  echo "| round | replace | fresh load of the same version | replace / fresh | CPU: replace / fresh | peak RSS |"
  echo "|---:|---:|---:|---:|---:|---:|"
  : > "$work/replace.txt"
  for r in $(seq "$rounds"); do
    freshdb bench_replace
    version "$r-a"; ingest bench_replace "$src" replace
    # What the first version's load leaves (autovacuum's work on the new
    # partition, a checkpoint's worth of WAL) is settled first, as the
    # fresh load below starts on a settled database too.
    sql bench_replace -c "VACUUM (ANALYZE) $(ftable bench_replace)" -c "CHECKPOINT"
    version "$r-b"; ingest bench_replace "$src" replace; rt=$T; rm=$RSS; rc=$CPU
    [ "$(sql bench_replace -c "SELECT count(*) FROM jobs WHERE status = 'replaced'")" = 1 ] ||
      { echo "bench: the second version did not replace the first" >&2; exit 1; }
    freshdb bench_replace
    sql bench_replace -c "CHECKPOINT"
    ingest bench_replace "$src" replace; ft=$T; fc=$CPU
    echo "$rt $ft" >> "$work/replace.txt"
    echo "| $r | ${rt} s | ${ft} s | $(ratio "$rt" "$ft") | ${rc} / ${fc} s | ${rm} MB |"
  done
  echo "| median | $(cut -d' ' -f1 "$work/replace.txt" | median) s | $(cut -d' ' -f2 "$work/replace.txt" | median) s | $(ratio "$(cut -d' ' -f1 "$work/replace.txt" | median)" "$(cut -d' ' -f2 "$work/replace.txt" | median)") | | |"
  ;;
diff)
  bd=$(data "$base_n")
  diff_formats=${DIFF_FORMATS:-geojsonl shp}
  echo
  echo "A new version of a $base_n-feature keyed source with P % of its features changed: only what changed, against a fresh load of the same version (the floor of a full replace)"
  echo
  echo "| round | format | P % | features changed | only what changed | full replace | fresh load of the version | wall: changed / full replace, / fresh | CPU: changed / full replace / fresh (client + server) | CPU ratio: / full replace, / fresh | floor (inspect: read once) | peak RSS |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for pct in ${DIFF_PCT:-1 100}; do
  dd="$work/diff-$base_n-$pct"
  mkdir -p "$dd"
  # v1 is the generated file; v2 changes every (100/pct)-th feature's year,
  # and every fifth of those moves its second vertex by 1e-8 degrees.
  if [ ! -f "$dd/v2.geojsonl" ]; then
    cp "$bd/parcels_$base_n.geojsonl" "$dd/v1.geojsonl.tmp"
    mv "$dd/v1.geojsonl.tmp" "$dd/v1.geojsonl"
    awk -v every="$(awk -v p="$pct" 'BEGIN {printf "%d", 100 / p}')" '
      NR % every == 0 {
        sub(/"year":[0-9]+/, "\"year\":2026")
        if (NR % (every * 5) == 0) { n = split($0, a, "],\\["); sub(/,/, "1,", a[2]); s = a[1]; for (i = 2; i <= n; i++) s = s "],[" a[i]; $0 = s }
      }
      { print }' "$dd/v1.geojsonl" > "$dd/v2.geojsonl.tmp"
    mv "$dd/v2.geojsonl.tmp" "$dd/v2.geojsonl"
  fi
  if [[ " $diff_formats " == *" shp "* ]] && [ ! -f "$dd/v2.shp" ]; then
    for v in v1 v2; do
      ogr2ogr -f "ESRI Shapefile" "$dd/$v.shp" "$dd/$v.geojsonl" -nlt MULTIPOLYGON -lco ENCODING=UTF-8 2>/dev/null
    done
  fi
  : > "$work/diff.txt"
  for r in $(seq "$rounds"); do
    for fmt in $diff_formats; do
      src="$dd/src.$fmt"
      freshdb bench_diff
      rm -f "$dd"/src.*
      for f in "$dd"/v1.*; do cp "$f" "$dd/src.${f##*.}"; done
      ingest bench_diff "$src" diff --key parcel_id
      sql bench_diff -c "VACUUM (ANALYZE) $(ftable bench_diff)" -c "CHECKPOINT"
      rm -f "$dd"/src.*
      for f in "$dd"/v2.*; do cp "$f" "$dd/src.${f##*.}"; done
      ingest bench_diff "$src" diff --key parcel_id; dt=$T; dc=$CPU; drss=$RSS; dcs="$CCPU + $SCPU"
      [ "$(sql bench_diff -c "SELECT count(*) FROM jobs WHERE status = 'replaced'")" = 1 ] ||
        { echo "bench: the second version did not replace the first" >&2; exit 1; }
      changed=$(sql bench_diff -c "SELECT geometry + attributes - least(geometry, attributes) + added + removed FROM job_changes WHERE base_job_id IS NOT NULL")
      if [ "${DIFF_COMPARE:-1}" = 0 ]; then
        echo "| $r | $fmt | $pct | $changed | ${dt} s | — | — | — | ${dc} ($dcs) s | — | — | ${drss} MB |"
        continue
      fi
      # A full replace of the same version over the same first version
      # (GEOINGEST_FULL_REPLACE=1: the version loaded whole, matched on the
      # server, the old generation retired), the comparator of the target.
      freshdb bench_diff
      rm -f "$dd"/src.*
      for f in "$dd"/v1.*; do cp "$f" "$dd/src.${f##*.}"; done
      ingest bench_diff "$src" diff --key parcel_id
      sql bench_diff -c "VACUUM (ANALYZE) $(ftable bench_diff)" -c "CHECKPOINT"
      rm -f "$dd"/src.*
      for f in "$dd"/v2.*; do cp "$f" "$dd/src.${f##*.}"; done
      GEOINGEST_FULL_REPLACE=1 ingest bench_diff "$src" diff --key parcel_id; rc=$CPU; rt=$T
      # The full replace's floor: a fresh load of the same version into an
      # empty database.
      freshdb bench_diff
      sql bench_diff -c "CHECKPOINT"
      ingest bench_diff "$src" diff --key parcel_id; ft=$T; fc=$CPU; fcs="$CCPU + $SCPU"
      timed "$work/geoingest" inspect "$src"; floor=$T
      echo "$dt $ft" >> "$work/diff.txt"
      echo "| $r | $fmt | $pct | $changed | ${dt} s | ${rt} s | ${ft} s | $(ratio "$dt" "$rt") / $(ratio "$dt" "$ft") | ${dc} ($dcs) / ${rc} / ${fc} ($fcs) s | **$(ratio "$dc" "$rc")** / **$(ratio "$dc" "$fc")** | ${floor} s | ${drss} MB |"
    done
  done
  done
  ;;
small)
  inbox="$work/small-$small_jobs"
  if [ ! -f "$inbox/.done" ]; then
    rm -rf "$inbox"; mkdir -p "$inbox"
    "$work/parcelgen" -n $((small_jobs * 2)) -label small -out "$work/small-src" >/dev/null
    awk -v dir="$inbox" -v jobs="$small_jobs" '
      { f = sprintf("%s/upload_%05d.geojson", dir, (NR - 1) % jobs);
        n[f]++; printf "%s%s", (n[f] == 1 ? "{\"type\":\"FeatureCollection\",\"features\":[" : ","), $0 > f }
      END { for (f in n) { print "]}" > f; close(f) } }' "$work/small-src/parcels_small.geojsonl"
    touch "$inbox/.done"
  fi
  echo
  echo "$small_jobs small GeoJSON uploads (2 parcels each) in one inbox, served by P \`geoingest serve --inbox\` processes on one database (each process delivers every file: the other P-1 deliveries of each are duplicates)"
  echo
  echo "| serve processes | wall time to the last commit | committed jobs | jobs/s | duplicates stopped at the claim gate | deliveries held (the claim of a live worker: retried after its lease) |"
  echo "|---:|---:|---:|---:|---:|---:|"
  for p in $procs; do
    freshdb bench_small
    rm -f "$work"/serve-*.log
    start=$(date +%s.%N)
    pids=()
    for i in $(seq "$p"); do
      "$work/geoingest" serve --database-url "$(dburl bench_small)" --inbox "$inbox" --poll "$small_poll" --settle 0s \
        --metrics-addr "" >"$work/serve-$i.log" 2>&1 &
      pids+=($!)
    done
    # Throughput is committed jobs over the time to the last commit. A
    # delivery that finds another live worker's claim is given back until
    # that claim's lease ends (minutes): by design it waits rather than
    # polls, so waiting for the processes to go idle would time the lease.
    jobs=0
    while [ "$jobs" -lt "$small_jobs" ]; do
      for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || { echo "bench: serve exited: $(tail -3 "$work"/serve-*.log)" >&2; exit 1; }; done
      sleep 0.2
      jobs=$(sql bench_small -c "SELECT count(*) FROM jobs")
    done
    wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
    kill -TERM "${pids[@]}"
    for pid in "${pids[@]}"; do wait "$pid" || true; done
    dups=$(cat "$work"/serve-*.log | grep -c "duplicate stopped at the claim gate" || true)
    held=$(cat "$work"/serve-*.log | grep -c "claim held by another worker" || true)
    echo "| $p | ${wall} s | $jobs | $(ratio "$jobs" "$wall") | $dups | $held |"
  done
  ;;
formats)
  # The formats read with GDAL: geoingest (OGR through cgo) against
  # ogr2ogr, each loading FORMATS_N parcels into an empty database, and
  # the raw COPY limit of the same rows.
  n=${FORMATS_N:-$base_n}
  bd=$(data "$n")
  for f in gpkg fgb; do
    [ -f "$bd/parcels_$n.$f" ] || ogr2ogr -f "$([ $f = gpkg ] && echo GPKG || echo FlatGeobuf)" "$bd/parcels_$n.$f" \
      "$bd/parcels_$n.geojsonl" -nln parcels -nlt MULTIPOLYGON 2>/dev/null
  done
  echo
  echo "Fresh load of $n parcels from a GeoPackage and a FlatGeobuf into an empty database: geoingest against ogr2ogr --config PG_USE_COPY YES (raw COPY limit: binary COPY of geoingest's rows into an empty table shaped like parcels, then the GiST build)"
  echo
  echo "| format | input size | geoingest wall | ogr2ogr wall | raw COPY + GiST wall | geoingest / ogr2ogr, wall (of medians; per round) | CPU: geoingest / ogr2ogr / raw COPY | CPU ratio geoingest / ogr2ogr (per round) | geoingest peak RSS | ogr2ogr peak RSS | load average |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for f in gpkg fgb; do
    file="$bd/parcels_$n.$f"
    : > "$work/formats-$f.txt"
    for r in $(seq "$rounds"); do
      freshdb bench_formats
      ingest bench_formats "$file" "formats-$f-$r"; gt=$T; gm=$RSS; gc=$CPU; gcs="client $CCPU + server $SCPU"
      dumprows bench_formats "$JOB" "$work/rows.bin"
      freshdb bench_formats
      ogr bench_formats "$file" ogr_parcels -overwrite; ot=$T; om=$RSS; oc=$CPU; ocs="client $CCPU + server $SCPU"
      freshdb bench_formats
      timed "${psqlcmd[@]}" "$(dburl bench_formats)" -c "CREATE TABLE raw (LIKE parcels INCLUDING DEFAULTS INCLUDING GENERATED)" \
        -c "\\copy raw ($(rowcols bench_formats)) FROM '$work/rows.bin' (FORMAT binary)" \
        -c "CREATE INDEX ON raw USING gist (geom)"; rt=$T; rc=$CPU
      load=$(cut -d' ' -f1 /proc/loadavg)
      echo "$gt $ot $gm $om $gc $oc $rt $rc $load" >> "$work/formats-$f.txt"
      echo "#   $f round $r (load $load): geoingest ${gt} s (${gm} MB, ${gc} s CPU: ${gcs}), ogr2ogr ${ot} s (${om} MB, ${oc} s CPU: ${ocs}), raw COPY + GiST ${rt} s (${rc} s CPU)" >&2
    done
    fc() { cut -d' ' -f"$1" "$work/formats-$f.txt" | median; }
    echo "| $f | $(du -h --apparent-size "$file" | cut -f1) | $(fc 1) s | $(fc 2) s | $(fc 7) s | $(ratio "$(fc 1)" "$(fc 2)") ($(awk '{printf "%s%.2f", (NR>1?" ":""), $1/$2}' "$work/formats-$f.txt")) | $(fc 5) / $(fc 6) / $(fc 8) s | $(ratio "$(fc 5)" "$(fc 6)") ($(awk '{printf "%s%.2f", (NR>1?" ":""), $5/$6}' "$work/formats-$f.txt")) | $(fc 3) MB | $(fc 4) MB | $(cut -d' ' -f9 "$work/formats-$f.txt" | xargs) |"
  done
  if [ -n "${RSS_BY_MAPPING:-}" ]; then
    for f in gpkg fgb; do
      freshdb bench_formats
      bymapping "geoingest, $f" "$work/geoingest" ingest --json --database-url "$(dburl bench_formats)" --pipeline-version "formats-$f-map" "$bd/parcels_$n.$f"
      freshdb bench_formats
      bymapping "ogr2ogr, $f" ogr2ogr --config PG_USE_COPY YES -f PostgreSQL "PG:$(dburl bench_formats)" "$bd/parcels_$n.$f" -nln ogr_parcels -overwrite \
        -nlt PROMOTE_TO_MULTI -lco GEOMETRY_NAME=geom -lco SPATIAL_INDEX=GIST
    done
  fi
  ;;
typed)
  # 21 fields: parcelgen's 5 and 16 more derived from the line number.
  bd=$(data "$base_n")
  td="$work/typed-$base_n"
  mkdir -p "$td"
  if [ ! -f "$td/parcels.geojsonl" ]; then
    awk '{
      i = NR
      extra = sprintf(",\"apn_code\":\"%d\",\"county\":\"06037\",\"zoning\":\" Z-%d \",\"city\":\"City %d\",\"street\":\"%d Main St\",\"zip\":\"%05d\",\"units\":%d,\"rooms\":%d,\"owner_id\":%s,\"area_ft\":%d.%02d,\"tax\":%d.%04d,\"vacant\":%s,\"homestead\":\"%s\",\"sold_on\":\"%04d-%02d-%02d\",\"updated\":\"2024-%02d-%02dT%02d:%02d:%02dZ\",\"note\":\"n%d\"",
        i % 100000, i % 40, i % 300, i % 9999, i % 99999, i % 7, 1 + i % 12, "4" sprintf("%09d", i), 500 + i % 9000, i % 100, i % 20000, i % 10000,
        (i % 2 ? "true" : "false"), (i % 3 ? "Y" : "N"), 1950 + i % 70, 1 + i % 12, 1 + i % 28, 1 + i % 12, 1 + i % 28, i % 24, i % 60, i % 60, i)
      k = index($0, "},\"geometry\"")
      print substr($0, 1, k - 1) extra substr($0, k)
    }' "$bd/parcels_$base_n.geojsonl" > "$td/parcels.geojsonl"
  fi
  cat > "$td/schema.yaml" <<'YAML'
targets:
  parcels:
    columns:
      - {name: parcel_id, type: text}
      - {name: owner_name, type: text}
      - {name: land_use, type: text}
      - {name: assessed, type: numeric}
      - {name: built_year, type: int8}
      - {name: apn_code, type: text}
      - {name: county, type: text}
      - {name: zoning, type: text}
      - {name: city, type: text}
      - {name: street, type: text}
      - {name: zip, type: text}
      - {name: units, type: int8}
      - {name: rooms, type: int8}
      - {name: owner_id, type: int8}
      - {name: area_ft, type: numeric}
      - {name: tax, type: numeric}
      - {name: vacant, type: boolean}
      - {name: homestead, type: boolean}
      - {name: sold_on, type: date}
      - {name: updated_at, type: timestamptz}
mappings:
  - name: county
    target: parcels
    fields:
      parcel_id: {from: parcel_id}
      owner_name: {from: owner}
      land_use: {from: land_use}
      assessed: {from: assessed_value}
      built_year: {from: year}
      apn_code: {from: apn_code, pad: 6}
      county: {from: county}
      zoning: {from: zoning, trim: true}
      city: {from: city}
      street: {from: street}
      zip: {from: zip}
      units: {from: units}
      rooms: {from: rooms}
      owner_id: {from: owner_id}
      area_ft: {from: area_ft}
      tax: {from: tax}
      vacant: {from: vacant}
      homestead: {from: homestead}
      sold_on: {from: sold_on}
      updated_at: {from: updated}
YAML
  # The shapefile's mapping: the DBF's laundered name, and the date-time
  # as ogr2ogr writes it into a text field.
  sed -n '/^  - name: county$/,$p' "$td/schema.yaml" | sed -e 's/name: county$/name: county_shp/' -e 's/from: assessed_value/from: assessed_v/' \
    -e 's|from: updated}|from: updated, format: "2006/01/02 15:04:05-07"}|' >> "$td/schema.yaml"
  if [[ " ${TYPED_FORMATS:-geojsonl shp} " == *" shp "* && ! -f "$td/parcels.shp" ]]; then
    ogr2ogr -f "ESRI Shapefile" "$td/parcels.shp" "$td/parcels.geojsonl" -nlt MULTIPOLYGON -lco ENCODING=UTF-8 -mapFieldType DateTime=String 2>/dev/null
  fi
  typedcols="job_ref, feature_index, layer, properties, geom, area_m2, parcel_id, owner_name, land_use, assessed, built_year, apn_code, county, zoning, city, street, zip, units, rooms, owner_id, area_ft, tax, vacant, homestead, sold_on, updated_at"
  header "Fresh load of $base_n parcels (GeoJSON lines; a shapefile) under a 20-column typed mapping into an empty database (raw COPY limit: binary COPY of geoingest's rows with their typed columns into an empty table shaped like the typed feature table, then the GiST build; ogr2ogr into the columns it types)"
  for f in ${TYPED_FORMATS:-geojsonl shp}; do
  mapping=county; [ "$f" = shp ] && mapping=county_shp
  : > "$work/typed-$f.txt"
  for r in $(seq "$rounds"); do
    freshdb bench_typed
    "$work/geoingest" schema apply --database-url "$(dburl bench_typed)" --schema "$td/schema.yaml" >/dev/null
    ingest bench_typed "$td/parcels.$f" "typed-$f-$r" --schema "$td/schema.yaml" --mapping "$mapping"; gt=$T; gm=$RSS; gc=$CPU; gcs="client $CCPU + server $SCPU"
    [ "$(sql bench_typed -c "SELECT count(*) FROM geoingest_typed_parcels WHERE updated_at IS NOT NULL AND extras ? 'note'")" = "$base_n" ] ||
      { echo "bench: the typed columns were not written" >&2; exit 1; }
    sql bench_typed -c "\\copy (SELECT $typedcols FROM geoingest_store.parcels) TO '$work/rows.bin' (FORMAT binary)"
    freshdb bench_typed
    ogr bench_typed "$td/parcels.$f" ogr_parcels -overwrite; ot=$T; om=$RSS; oc=$CPU
    [ -n "${TYPED_SHOW_OGR:-}" ] && sql bench_typed -c "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'ogr_parcels'" >&2
    freshdb bench_typed
    "$work/geoingest" schema apply --database-url "$(dburl bench_typed)" --schema "$td/schema.yaml" >/dev/null
    timed "${psqlcmd[@]}" "$(dburl bench_typed)" -c "CREATE TABLE raw (LIKE geoingest_store.parcels INCLUDING DEFAULTS INCLUDING GENERATED)" \
      -c "\\copy raw ($typedcols) FROM '$work/rows.bin' (FORMAT binary)" \
      -c "CREATE INDEX ON raw USING gist (geom)"; rt=$T; rc=$CPU
    echo "$gt $ot $rt $gm $om $gc $oc $rc" >> "$work/typed-$f.txt"
    echo "#   typed $f round $r (load $(cut -d' ' -f1-3 /proc/loadavg)): geoingest ${gt} s (${gm} MB, ${gc} s CPU: ${gcs}), ogr2ogr ${ot} s (${om} MB, ${oc} s CPU), raw COPY + GiST ${rt} s (${rc} s CPU)" >&2
  done
  summary "typed fresh $base_n ($f, 20 columns)" "$work/typed-$f.txt"
  done
  ;;
*) echo "bench: unknown case $c" >&2; exit 2 ;;
esac
done
