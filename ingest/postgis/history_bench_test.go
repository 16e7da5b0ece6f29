package postgis

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkHistoryCapture measures what keeping history costs a version
// that retires a whole generation (a delete of a source, a full replace):
// the retirement of a generation of GEOINGEST_BENCH_N (default 20,000)
// parcels in a transaction, rolled back, with no history (off: no job
// named), with the trigger copying every row (row: 0033's way, what a
// diff's few deleted rows still take), and as the write gate retires a
// generation since migrations 0037, 0039 and 0040 (bulk: one INSERT ... SELECT,
// then the delete with the trigger off, into feature_history indexed by
// retired_by alone and with no foreign key); and, for the comparison with validity
// ranges on the rows (docs/design.md), what stamping every row of the
// generation retired costs instead (ranges: an UPDATE of each row, a new
// tuple, as setting its valid_to would be); and as the write gate
// retires a generation with a partition of its own since migration 0046
// (detach: the partition detached and kept as the history, no row copied;
// retirewhole.go). The generation has a partition of its own. And
// BenchmarkExpiredTiles below.
func BenchmarkHistoryCapture(b *testing.B) {
	ctx := context.Background()
	svc := setupBench(b)
	svc.Store.(*Store).OwnPartitionBytes = 1
	n := benchN(20000)
	dir := b.TempDir()
	big, small := filepath.Join(dir, "big.geojson"), filepath.Join(dir, "small.geojson")
	writeBenchParcels(b, big, n, false)
	writeBenchParcels(b, small, 10, false)
	var jobs []string
	for _, p := range []string{big, small} {
		src, f, err := localfs.Files{}.Source(p)
		if err != nil {
			b.Fatal(err)
		}
		job, err := ingest.NewJob(src, ingest.DefaultParams("parcels"), f)
		if err != nil {
			b.Fatal(err)
		}
		if r := svc.Run(ctx, job); r.Err != nil {
			b.Fatal(r.Err)
		}
		jobs = append(jobs, job.ID)
	}
	pool := svc.Store.(*Store).pool
	sizes := retire(b, pool, jobs[0], jobs[1], "bulk")
	for _, mode := range []string{"off", "row", "bulk", "ranges", "detach"} {
		b.Run("history="+mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				retire(b, pool, jobs[0], jobs[1], mode)
			}
			if mode == "bulk" {
				// Measured on the first retirement, before any rolled
				// back one left dead tuples.
				b.ReportMetric(sizes[0]/float64(n), "live-B/row")
				b.ReportMetric(sizes[1]/float64(n), "history-B/row")
				b.ReportMetric(sizes[2]/float64(n), "history-index-B/row")
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/row")
		})
	}
}

// retire retires victim's rows in a transaction it rolls back, and
// returns, before that, the sizes in bytes of the table that holds
// victim's rows (with its indexes and TOAST), of feature_history (the
// same) and of feature_history's index.
func retire(b *testing.B, pool *pgxpool.Pool, victim, namer, mode string) (sizes [3]float64) {
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if mode == "row" || mode == "bulk" || mode == "detach" {
		if _, err := tx.Exec(ctx, `SELECT set_config('geoingest.history_job', $1, true), set_config('geoingest.history_ref', (SELECT job_ref FROM jobs WHERE job_id = $1)::text, true)`, namer); err != nil {
			b.Fatal(err)
		}
	}
	stmt := `DELETE FROM parcels WHERE job_ref = (SELECT job_ref FROM jobs WHERE job_id = $1)`
	if mode == "ranges" {
		stmt = `UPDATE parcels SET layer = layer WHERE job_ref = (SELECT job_ref FROM jobs WHERE job_id = $1)`
	}
	if mode == "bulk" {
		stmt = `SELECT geoingest_drop_job_features('parcels', (SELECT job_ref FROM jobs WHERE job_id = $1))`
	}
	if mode == "detach" {
		var why string
		if err := tx.QueryRow(ctx, `SELECT coalesce(geoingest_retire_whole('parcels', (SELECT job_ref FROM jobs WHERE job_id = $1)), '')`, victim).Scan(&why); err != nil {
			b.Fatal(err)
		}
		if why != "" {
			b.Fatal("the generation was not detached: ", why)
		}
		return sizes
	}
	if _, err := tx.Exec(ctx, stmt, victim); err != nil {
		b.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_total_relation_size(format('geoingest_store.%I', geoingest_job_table('parcels', j.job_ref))::regclass),
		pg_total_relation_size('feature_history'), pg_relation_size('feature_history_retired_idx')
		FROM jobs j WHERE j.job_id = $1`, victim).Scan(&sizes[0], &sizes[1], &sizes[2]); err != nil {
		b.Fatal(err)
	}
	return sizes
}

// BenchmarkExpiredTiles: the tile list of a job whose change record has
// GEOINGEST_BENCH_N (default 20,000) changed parcels, zooms 0 to 14.
func BenchmarkExpiredTiles(b *testing.B) {
	ctx := context.Background()
	svc := setupBench(b)
	n := benchN(20000)
	pool := svc.Store.(*Store).pool
	const job = "be0c4be0c4be0c4be0c4be0c4be0c4be0c4be0c4be0c4be0c4be0c4be0c4be0c"
	if _, err := pool.Exec(ctx, `INSERT INTO jobs (job_id, source_bucket, source_key, version_token, order_token, params, pipeline, pipeline_version, target_table, status, job_ref, content_hash)
		VALUES ($1, 'b', 'k', 'v', 'o', '{}', 'geoingest', '1', 'parcels', 'current', -7, 'h')`, job); err != nil {
		b.Skip("the ledger's columns changed: ", err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO job_changes (job_id, target_table, source_bucket, source_key, base_job_id) VALUES ($1, 'parcels', 'b', 'k', 'base')`, job); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO feature_changes (job_id, feature_id, kind, old_bbox, new_bbox, area_delta_m2)
		SELECT $2, i, 'geometry', ST_MakeEnvelope(x, y, x + 0.0001, y + 0.0001, 4326), ST_MakeEnvelope(x, y, x + 0.00012, y + 0.0001, 4326), 1
		FROM (SELECT i, 2.0 + (i % 1000) * 0.0005 AS x, 48.0 + (i / 1000) * 0.0005 AS y FROM generate_series(1, $1) i) q`, n, job); err != nil {
		b.Fatal(err)
	}
	st := svc.Store.(*Store)
	var tiles int
	start := time.Now()
	for i := 0; i < b.N; i++ {
		e, err := st.ExpiredTiles(ctx, job, ingest.DefaultTileZoom)
		if err != nil {
			b.Fatal(err)
		}
		tiles = len(e.Tiles)
	}
	b.ReportMetric(float64(tiles), "tiles")
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/list")
}

// benchN is GEOINGEST_BENCH_N, or def.
func benchN(def int) int {
	if n, err := strconv.Atoi(os.Getenv("GEOINGEST_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return def
}
