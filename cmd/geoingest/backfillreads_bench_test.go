package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
)

// BenchmarkBackfillReads measures what a reader meets after a batch load
// (docs/benchmarks.md, "Reads after a backfill"): GEOINGEST_BENCH_SOURCES
// (default 30) sources of GEOINGEST_BENCH_ROWS (25,000) parcels, each a
// county of 30 m squares beside the others and padded to some 440 bytes a
// feature as a cadastre's GeoJSON is (so that each is a job of 8 MiB or
// more, in a partition of its own), loaded by `geoingest backfill --dir`
// into a fresh database: once as it runs by default (the compactor beside
// the jobs and before the exit), once with --no-compact followed by
// `geoingest compact`. After each, a 70 m bbox query at random places,
// planned every time (literal coordinates), warm (GEOINGEST_BENCH_QUERIES,
// default 200, on one session) and as the first query of a new connection
// (a quarter as many), against the same rows copied into one table with
// one GiST index. It prints p50 of each and the ratios;
// GEOINGEST_BENCH_MODE=compact or no-compact runs one of the two loads.
// The b.N loop is not used.
func BenchmarkBackfillReads(b *testing.B) {
	nsrc := benchEnvInt("GEOINGEST_BENCH_SOURCES", 30)
	rows := benchEnvInt("GEOINGEST_BENCH_ROWS", 25000)
	queries := benchEnvInt("GEOINGEST_BENCH_QUERIES", 200)
	dir := b.TempDir()
	side := 1
	for side*side < rows {
		side++
	}
	cols := 1
	for cols*cols < nsrc {
		cols++
	}
	const step = 0.0003 // some 30 m
	county := float64(side) * step
	for i := 0; i < nsrc; i++ {
		writeCounty(b, filepath.Join(dir, fmt.Sprintf("county%04d.geojson", i)), 2+float64(i%cols)*county, 45+float64(i/cols)*county, side, rows, step)
	}
	extent := [4]float64{2, 45, 2 + float64(cols)*county, 45 + float64((nsrc+cols-1)/cols)*county}
	fmt.Printf("BenchmarkBackfillReads: %d sources of %d parcels (%d rows), %d queries warm, %d on new connections; load %s\n",
		nsrc, rows, nsrc*rows, queries, max(queries/4, 5), loadavg())
	modes := []string{"backfill (compacts before it exits)", "backfill --no-compact, then compact"}
	switch os.Getenv("GEOINGEST_BENCH_MODE") { // one of them only
	case "compact":
		modes = modes[:1]
	case "no-compact":
		modes = modes[1:]
	}
	for _, mode := range modes {
		db := pgtest.NewDB(b)
		env := map[string]string{"DATABASE_URL": db}
		args := []string{"backfill", "--dir", dir, "--workers", "2", "--quiet", "--log-level", "info"}
		if strings.Contains(mode, "no-compact") {
			args = append(args, "--no-compact")
		}
		start := time.Now()
		var stdout, stderr strings.Builder
		m := NewMain()
		m.Stdout, m.Stderr = &stdout, &stderr
		m.Getenv = func(k string) string { return env[k] }
		if code := m.Run(context.Background(), args); code != 0 {
			b.Fatalf("%v: exit %d: %s%s", args, code, stdout.String(), stderr.String())
		}
		load := time.Since(start)
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || strings.Contains(l, "msg=compacted") || strings.Contains(l, "warning") {
				fmt.Println("  " + l)
			}
		}
		ownAfter := benchQueryInt(b, db, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'geoingest_store.parcels'::regclass`)
		var compact time.Duration
		if strings.Contains(mode, "no-compact") {
			start = time.Now()
			m := NewMain()
			m.Stdout, m.Stderr = &stdout, &stderr
			m.Getenv = func(k string) string { return env[k] }
			if code := m.Run(context.Background(), []string{"compact"}); code != 0 {
				b.Fatalf("compact: exit %d: %s", code, stderr.String())
			}
			compact = time.Since(start)
		}
		parts := benchQueryInt(b, db, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'geoingest_store.parcels'::regclass`)
		benchExec(b, db, `CREATE TABLE one_table AS SELECT id, area_m2, geom FROM geoingest_current_parcels`)
		benchExec(b, db, `CREATE INDEX ON one_table USING gist (geom)`)
		// Only the copy is vacuumed and analyzed: the load's tables are
		// read as the command left them (and as autovacuum keeps them).
		benchExec(b, db, `VACUUM ANALYZE one_table`)
		parentRows := benchQueryInt(b, db, `SELECT reltuples::bigint FROM pg_class WHERE oid = 'geoingest_store.parcels'::regclass`)
		rng := rand.New(rand.NewPCG(1, 2))
		layoutWarm, layoutNew := benchReads(b, db, "parcels", extent, queries, rng)
		rng = rand.New(rand.NewPCG(1, 2))
		oneWarm, oneNew := benchReads(b, db, "one_table", extent, queries, rng)
		layoutPlan := benchFirstPlan(b, db, "parcels", extent, max(queries/4, 5), rand.New(rand.NewPCG(3, 4)))
		onePlan := benchFirstPlan(b, db, "one_table", extent, max(queries/4, 5), rand.New(rand.NewPCG(3, 4)))
		fmt.Printf("  a new connection's first plan (server): %.2f ms, one table %.2f ms\n", layoutPlan, onePlan)
		fmt.Printf("| %s | %.1f s | %.1f s | %d (%d before compact) | %.3f / %.3f ms = %.2f× | %.2f / %.2f ms = %.2f× | parent's reltuples %d |\n",
			mode, load.Seconds(), compact.Seconds(), parts, ownAfter,
			layoutWarm, oneWarm, layoutWarm/max(oneWarm, 0.25), layoutNew, oneNew, layoutNew/max(oneNew, 0.25), parentRows)
		if os.Getenv("GEOINGEST_BENCH_STATS") != "" {
			benchStatsVariants(b, db, extent, queries)
		}
	}
}

// benchStatsVariants measures what the statistics of the partitioned
// parent cost (GEOINGEST_BENCH_STATS=1): an ANALYZE of the parent (which
// also analyzes every partition) and the bbox query on a new connection
// with the parent's statistics at the default target, at a lower one for
// the parent only, and with none; and with the shared partition's geom
// at the default target instead of migration 0024's 1000.
func benchStatsVariants(b *testing.B, db string, extent [4]float64, queries int) {
	fresh := func(label string) {
		rng := rand.New(rand.NewPCG(1, 2))
		warm, nw := benchReads(b, db, "parcels", extent, queries, rng)
		plan := benchFirstPlan(b, db, "parcels", extent, max(queries/4, 5), rand.New(rand.NewPCG(1, 2)))
		fmt.Printf("  stats %s: bbox warm %.3f ms, new connection %.2f ms, its planning (server) %.2f ms\n", label, warm, nw, plan)
	}
	timed := func(label, sql string) {
		start := time.Now()
		benchExec(b, db, sql)
		fmt.Printf("  %s: %.1f s\n", label, time.Since(start).Seconds())
	}
	fresh("as left")
	timed("ANALYZE geoingest_store.parcels (target 100)", `ANALYZE geoingest_store.parcels`)
	fresh("parent at 100")
	benchExec(b, db, `ALTER TABLE geoingest_store.parcels ALTER COLUMN geom SET STATISTICS 10`)
	timed("ANALYZE geoingest_store.parcels (parent's geom at 10)", `ANALYZE geoingest_store.parcels`)
	fresh("parent's geom at 10")
	if err := benchTryExec(db, `DELETE FROM pg_statistic WHERE starelid = 'geoingest_store.parcels'::regclass AND stainherit`); err != nil {
		fmt.Printf("  parent without statistics: not measured (%v)\n", err)
	} else {
		fresh("parent without statistics")
	}
	benchExec(b, db, `ALTER TABLE geoingest_store.parcels ALTER COLUMN geom SET STATISTICS -1`)
	benchExec(b, db, `ALTER TABLE geoingest_store.parcels_shared ALTER COLUMN geom SET STATISTICS 100`)
	timed("ANALYZE geoingest_store.parcels (shared's geom at 100)", `ANALYZE geoingest_store.parcels`)
	fresh("shared partition's geom at 100, parent at 100")
}

// writeCounty writes n squares of 20 m on a grid of side columns from
// (x0, y0), each with the properties of a cadastre's parcel.
func writeCounty(b *testing.B, path string, x0, y0 float64, side, n int, step float64) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(`{"type":"FeatureCollection","features":[`)
	pad := strings.Repeat("x", 200)
	for i := 0; i < n; i++ {
		if i > 0 {
			w.WriteString(",\n")
		}
		x, y := x0+float64(i%side)*step, y0+float64(i/side)*step
		fmt.Fprintf(w, `{"type":"Feature","properties":{"parcel_id":"%s-%07d","owner":"Owner %d","land_use":"residential","assessed_value":%d,"year":%d,"note":"%s"},"geometry":{"type":"Polygon","coordinates":[[[%.7f,%.7f],[%.7f,%.7f],[%.7f,%.7f],[%.7f,%.7f],[%.7f,%.7f]]]}}`,
			filepath.Base(path), i, i%997, 100000+i%50000, 1900+i%120, pad, x, y, x+step*0.7, y, x+step*0.7, y+step*0.7, x, y+step*0.7, x, y)
	}
	w.WriteString("]}")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// benchReads returns the p50, in ms, of the 70 m bbox query on table at
// random places in extent: warm, and as a new connection's first query.
func benchReads(b *testing.B, db, table string, extent [4]float64, queries int, rng *rand.Rand) (warm, fresh float64) {
	ctx := context.Background()
	box := func() string {
		x := extent[0] + rng.Float64()*(extent[2]-extent[0])
		y := extent[1] + rng.Float64()*(extent[3]-extent[1])
		return fmt.Sprintf("SELECT id, area_m2 FROM %s WHERE ST_Intersects(geom, ST_MakeEnvelope(%.7f, %.7f, %.7f, %.7f, 4326))", table, x, y, x+0.0009, y+0.0006)
	}
	one := func(conn *pgx.Conn) float64 {
		start := time.Now()
		rows, err := conn.Query(ctx, box(), pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(start).Microseconds()) / 1000
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		one(conn)
	}
	var ws []float64
	for i := 0; i < queries; i++ {
		ws = append(ws, one(conn))
	}
	conn.Close(ctx)
	var fs []float64
	for i := 0; i < max(queries/4, 5); i++ {
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			b.Fatal(err)
		}
		fs = append(fs, one(conn))
		conn.Close(ctx)
	}
	return p50(ws), p50(fs)
}

// benchFirstPlan returns the p50, in ms, of the server's planning time
// (EXPLAIN's summary) of the 70 m bbox query as a new connection's first
// statement: what the catalogs and statistics a plan reads cost.
func benchFirstPlan(b *testing.B, db, table string, extent [4]float64, n int, rng *rand.Rand) float64 {
	ctx := context.Background()
	var ps []float64
	for i := 0; i < n; i++ {
		x := extent[0] + rng.Float64()*(extent[2]-extent[0])
		y := extent[1] + rng.Float64()*(extent[3]-extent[1])
		q := fmt.Sprintf("EXPLAIN (SUMMARY) SELECT id, area_m2 FROM %s WHERE ST_Intersects(geom, ST_MakeEnvelope(%.7f, %.7f, %.7f, %.7f, 4326))", table, x, y, x+0.0009, y+0.0006)
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			b.Fatal(err)
		}
		rows, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				b.Fatal(err)
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Planning Time: "); ok {
				ms, _ := strconv.ParseFloat(strings.TrimSuffix(v, " ms"), 64)
				ps = append(ps, ms)
			}
		}
		rows.Close()
		conn.Close(ctx)
	}
	return p50(ps)
}

func p50(v []float64) float64 {
	sort.Float64s(v)
	return v[len(v)/2]
}

func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func benchQueryInt(b *testing.B, db, sql string) int64 {
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

func benchExec(b *testing.B, db, sql string) {
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		b.Fatal(err)
	}
}

func benchTryExec(db, sql string) error {
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), sql)
	return err
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
