package postgis

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkReadPath measures what a reader pays for the generations that
// pile up, before and after compaction, against one table holding the
// same rows with one GiST index:
//
//   - GEOINGEST_BENCH_GENERATIONS (default 300) current generations of
//     GEOINGEST_BENCH_ROWS parcels each (default 2500), every one in a
//     partition of its own, as the write gate leaves jobs of 8 MiB or
//     more (made here with the write gate's own server functions,
//     geoingest_create_job_storage, geoingest_finish_job_table and
//     geoingest_attach_job_table, and
//     ledger rows, without parsing files), laid out as counties side by
//     side; and 64 admin units over them, in the shared partition;
//   - the queries, at random places, each in its own round trip with
//     literal coordinates (planned every time, as psql, QGIS and map
//     servers send them): a ~70 m box ST_Intersects returning the rows
//     (bbox), and a spatial join of the parcels and admin units in a
//     ~300 m box (join); warm (the same session, over and over) and as
//     the first query on a new connection (new-conn, the connection
//     handshake not counted);
//   - Compact with Keep 8, then with Keep 0: the time of the whole and of
//     one fold, and the queries after each; after Keep 0 also on the
//     partitioned tables of geoingest_store directly, to compare with the
//     views parcels and admin_units that readers query;
//   - the cost of removing a generation: a DELETE of its rows from its
//     own partition (migration 0016; a DROP of the partition before)
//     against a DELETE of its rows from the shared partition (one of
//     GEOINGEST_BENCH_ROWS and one of GEOINGEST_BENCH_BIG rows, default
//     25000), each rolled back.
//
// It prints a table (ms, median and p99 of GEOINGEST_BENCH_QUERIES each,
// default 200, after as many warm-up queries up to 5; a quarter as many
// on new connections, at least 5 or all; GEOINGEST_BENCH_QUERIES_BEFORE
// for the layout as written, whose queries take seconds at thousands of
// partitions). The b.N loop is not used: run it with -benchtime 1x.
//
//	GEOINGEST_BENCH_GENERATIONS=3000 GEOINGEST_BENCH_ROWS=250 \
//	  go test ./ingest/postgis -run '^$' -bench ReadPath -benchtime 1x -timeout 1h
func BenchmarkReadPath(b *testing.B) {
	gens, rows := envInt(b, "GEOINGEST_BENCH_GENERATIONS", 300), envInt(b, "GEOINGEST_BENCH_ROWS", 2500)
	big, queries := envInt(b, "GEOINGEST_BENCH_BIG", 25000), envInt(b, "GEOINGEST_BENCH_QUERIES", 200)
	ctx := context.Background()
	url := pgtest.NewDB(b)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	s := NewStore(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))

	start := time.Now()
	side := 1
	for side*side < gens {
		side++
	}
	// A county is a square of rows parcels of 0.0003° (some 30 m) side.
	per := 1
	for per*per < rows {
		per++
	}
	cell := float64(per) * 0.0003
	for g := 0; g < gens; g++ {
		x0, y0 := 2+float64(g%side)*cell, 45+float64(g/side)*cell
		benchGeneration(b, pool, g, int64(g+1), rows, per, x0, y0)
	}
	ext := [4]float64{2, 45, 2 + float64(side)*cell, 45 + float64((gens+side-1)/side)*cell}
	benchAdminUnits(b, pool, ext)
	benchExec(b, pool, `ANALYZE`)
	fmt.Printf("read path: %d generations of %d parcels (%d rows), %d own partitions, loaded in %.0f s\n",
		gens, rows, gens*rows, gens, time.Since(start).Seconds())

	benchExec(b, pool, `CREATE TABLE one_parcels AS SELECT * FROM parcels`)
	benchExec(b, pool, `CREATE INDEX ON one_parcels USING gist (geom)`)
	benchExec(b, pool, `CREATE TABLE one_admin_units AS SELECT * FROM admin_units`)
	benchExec(b, pool, `CREATE INDEX ON one_admin_units USING gist (geom)`)
	benchExec(b, pool, `ANALYZE one_parcels`)
	benchExec(b, pool, `ANALYZE one_admin_units`)

	measure := func(layout, parcels, admin string, queries int) {
		var parts int
		parent := parcels
		if parent == "parcels" { // the view of migration 0014
			parent = "geoingest_store.parcels"
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = $1::regclass`, parent).Scan(&parts); err == nil && parts > 0 {
			layout = fmt.Sprintf("%s [%d partitions]", layout, parts)
		}
		for _, q := range []struct {
			name, sql string
			size      float64
		}{
			{"bbox", `SELECT id, area_m2 FROM ` + parcels + ` WHERE ST_Intersects(geom, ST_MakeEnvelope(%f, %f, %f, %f, 4326))`, 0.0007},
			{"join", `SELECT a.properties->>'name', count(*), sum(p.area_m2) FROM ` + parcels + ` p JOIN ` + admin +
				` a ON ST_Intersects(p.geom, a.geom) WHERE p.geom && ST_MakeEnvelope(%[1]f, %[2]f, %[3]f, %[4]f, 4326) GROUP BY 1`, 0.003},
		} {
			rng := rand.New(rand.NewPCG(1, 2))
			box := func() []any {
				x, y := ext[0]+rng.Float64()*(ext[2]-ext[0]-q.size), ext[1]+rng.Float64()*(ext[3]-ext[1]-q.size)
				return []any{x, y, x + q.size, y + q.size}
			}
			warm := make([]time.Duration, 0, queries)
			conn := benchConn(b, url)
			warmup := min(5, queries)
			for i := 0; i < queries+warmup; i++ {
				d := benchQuery(b, conn, fmt.Sprintf(q.sql, box()...))
				if i >= warmup {
					warm = append(warm, d)
				}
			}
			_ = conn.Close(ctx)
			cold := make([]time.Duration, 0, queries/4)
			for i := 0; i < max(queries/4, min(5, queries)); i++ {
				conn := benchConn(b, url)
				cold = append(cold, benchQuery(b, conn, fmt.Sprintf(q.sql, box()...)))
				_ = conn.Close(ctx)
			}
			if os.Getenv("GEOINGEST_BENCH_EXPLAIN") != "" {
				conn := benchConn(b, url)
				rows, err := conn.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF) "+fmt.Sprintf(q.sql, box()...))
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
					var line string
					_ = rows.Scan(&line)
					fmt.Println("   ", line)
				}
				_ = conn.Close(ctx)
			}
			fmt.Printf("%-42s %-5s warm p50 %8.3f ms p99 %8.3f ms | new-conn p50 %8.3f ms p99 %8.3f ms\n",
				layout, q.name, ms(pct(warm, 50)), ms(pct(warm, 99)), ms(pct(cold, 50)), ms(pct(cold, 99)))
		}
	}
	measure(fmt.Sprintf("%d own partitions", gens), "parcels", "admin_units", envInt(b, "GEOINGEST_BENCH_QUERIES_BEFORE", queries))
	measure("one table", "one_parcels", "one_admin_units", queries)

	t0 := time.Now()
	r, err := s.Compact(ctx, ingest.CompactOptions{Keep: 8})
	if err != nil {
		b.Fatal(err)
	}
	var folds []time.Duration
	for _, f := range r.Folded {
		folds = append(folds, f.Duration)
	}
	fmt.Printf("compact --keep 8: %d folded, %d dropped in %.1f s; one fold of %d rows: p50 %.1f ms p99 %.1f ms\n",
		len(r.Folded), r.Dropped, time.Since(t0).Seconds(), rows, ms(pct(folds, 50)), ms(pct(folds, 99)))
	benchExec(b, pool, `VACUUM ANALYZE geoingest_store.parcels`)
	if _, err := s.Compact(ctx, ingest.CompactOptions{Keep: 8}); err != nil { // what waited for the VACUUM
		b.Fatal(err)
	}
	measure("compacted (shared + 8 own)", "parcels", "admin_units", queries)
	if os.Getenv("GEOINGEST_BENCH_NOPARALLEL") != "" {
		rows, err := pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'geoingest_store.parcels'::regclass`)
		if err != nil {
			b.Fatal(err)
		}
		var names []string
		for rows.Next() {
			var n string
			_ = rows.Scan(&n)
			names = append(names, n)
		}
		for _, n := range names {
			benchExec(b, pool, `ALTER TABLE `+pgx.Identifier{"geoingest_store", n}.Sanitize()+` SET (parallel_workers = 0)`)
		}
		measure("compacted (shared + 8 own), parallel_workers 0", "parcels", "admin_units", queries)
	}
	t0 = time.Now()
	if r, err = s.Compact(ctx, ingest.CompactOptions{Keep: 0}); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("compact --keep 0: %d folded, %d dropped in %.1f s\n", len(r.Folded), r.Dropped, time.Since(t0).Seconds())
	benchExec(b, pool, `VACUUM ANALYZE geoingest_store.parcels`)
	if _, err := s.Compact(ctx, ingest.CompactOptions{Keep: 0}); err != nil {
		b.Fatal(err)
	}
	measure("compacted (shared only)", "parcels", "admin_units", queries)
	// The same queries on the tables under the views parcels and
	// admin_units (migration 0014): what the views cost a reader.
	measure("compacted, tables under the views", "geoingest_store.parcels", "geoingest_store.admin_units", queries)

	// Removing a generation: its rows deleted from its own partition, or
	// from the shared one (rolled back, so each is measured alike).
	for i, n := range []int{rows, big} {
		if i > 0 && n == rows {
			break
		}
		benchGeneration(b, pool, gens+n, int64(gens+n), n, intSqrt(n), ext[0], ext[1])
		own := benchRemove(b, pool, int64(gens+n))
		r, err := s.Compact(ctx, ingest.CompactOptions{Keep: 0})
		if err != nil {
			b.Fatal(err)
		}
		var fold time.Duration
		for _, f := range r.Folded {
			if f.JobID == benchJobID(int64(gens+n)) {
				fold = f.Duration
			}
		}
		shared := benchRemove(b, pool, int64(gens+n))
		fmt.Printf("a generation of %d rows: remove from its own partition %.1f ms, from the shared partition %.1f ms; its fold %.1f ms\n",
			n, ms(own), ms(shared), ms(fold))
	}
}

// benchGeneration makes generation g (ledger row, source, own partition
// of rows parcels in a per x per grid at x0, y0) as the write gate does.
func benchGeneration(b *testing.B, pool *pgxpool.Pool, g int, ref int64, rows, per int, x0, y0 float64) {
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	id := benchJobID(ref)
	key := fmt.Sprintf("county-%05d.geojson", g)
	if _, err := tx.Exec(ctx, `INSERT INTO jobs (job_id, source_bucket, source_key, version_token, params, pipeline, pipeline_version,
		target_table, status, content_hash, job_ref) VALUES ($1, 'bench', $2, 'v1', '{}', 'geoingest', '1', 'parcels', 'current', 'x', $3)`,
		id, key, ref); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sources (source_bucket, source_key, target_table, pipeline_version, current_job_id)
		VALUES ('bench', $1, 'parcels', '1', $2)`, key, id); err != nil {
		b.Fatal(err)
	}
	var schema, table string
	if err := tx.QueryRow(ctx, `SELECT schema_name, table_name FROM geoingest_create_job_storage('parcels', $1)`, ref).Scan(&schema, &table); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, table}.Sanitize()+` (job_ref, feature_index, properties, geom, area_m2)
		SELECT $1, i, jsonb_build_object('parcel', i, 'county', $2::int),
		       ST_Multi(ST_MakeEnvelope($3 + (i % $4) * 0.0003, $5 + (i / $4) * 0.0003,
		                                $3 + (i % $4) * 0.0003 + 0.00028, $5 + (i / $4) * 0.0003 + 0.00028, 4326)), NULL
		FROM generate_series(0, $6 - 1) i`, ref, g, x0, per, y0, rows); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE jobs j SET feature_count = f.written, total_area_m2 = f.area_m2, features_checksum = f.features_checksum
		FROM geoingest_finish_job_table('parcels', $1, false, '{}'::bigint[], true) f WHERE j.job_id = $2`, ref, id); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT geoingest_attach_job_table('parcels', $1)`, ref); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}

// benchAdminUnits writes 64 admin units tiling ext, as one job in the
// shared partition.
func benchAdminUnits(b *testing.B, pool *pgxpool.Pool, ext [4]float64) {
	ctx := context.Background()
	const ref = -(int64(1) << 40) // apart from the refs folds take (-1, -2, ...)
	id := benchJobID(ref)
	benchExec(b, pool, `INSERT INTO jobs (job_id, source_bucket, source_key, version_token, params, pipeline, pipeline_version,
		target_table, status, content_hash, job_ref) VALUES ('`+id+`', 'bench', 'admin.geojson', 'v1', '{}', 'geoingest', '1', 'admin_units', 'current', 'x', `+strconv.FormatInt(ref, 10)+`)`)
	benchExec(b, pool, `INSERT INTO sources (source_bucket, source_key, target_table, pipeline_version, current_job_id)
		VALUES ('bench', 'admin.geojson', 'admin_units', '1', '`+id+`')`)
	dx, dy := (ext[2]-ext[0])/8, (ext[3]-ext[1])/8
	if _, err := pool.Exec(ctx, `INSERT INTO geoingest_store.admin_units_shared (job_ref, feature_index, properties, geom, area_m2)
		SELECT $5, i, jsonb_build_object('name', 'unit ' || i),
		       ST_Multi(ST_MakeEnvelope($1::float8 + (i % 8) * $3::float8, $2::float8 + (i / 8) * $4::float8, $1::float8 + (i % 8 + 1) * $3::float8, $2::float8 + (i / 8 + 1) * $4::float8, 4326)), 0
		FROM generate_series(0, 63) i`, ext[0], ext[1], dx, dy, ref); err != nil {
		b.Fatal(err)
	}
	benchExec(b, pool, `UPDATE jobs SET feature_count = 64 WHERE job_id = '`+id+`'`)
}

// benchRemove times geoingest_drop_job_features for the generation of
// ref's job (its rows deleted from its own partition or from the shared
// one), rolled back.
func benchRemove(b *testing.B, pool *pgxpool.Pool, ref int64) time.Duration {
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	t0 := time.Now()
	if _, err := tx.Exec(ctx, `SELECT geoingest_drop_job_features(j.target_table, j.job_ref) FROM jobs j WHERE j.job_id = $1`, benchJobID(ref)); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

func benchJobID(ref int64) string { return fmt.Sprintf("%064x", uint64(ref)) }

func benchExec(b *testing.B, pool *pgxpool.Pool, sql string) {
	if _, err := pool.Exec(context.Background(), sql); err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
}

func benchConn(b *testing.B, url string) *pgx.Conn {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return conn
}

// benchQuery runs sql on conn and reads every row: the time of the round
// trip.
func benchQuery(b *testing.B, conn *pgx.Conn, sql string) time.Duration {
	t0 := time.Now()
	rows, err := conn.Query(context.Background(), sql)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
	return time.Since(t0)
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func intSqrt(n int) int {
	r := 1
	for r*r < n {
		r++
	}
	return r
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}
