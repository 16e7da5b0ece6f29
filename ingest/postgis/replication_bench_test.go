package postgis

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/postgistest/hatest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// BenchmarkReplication is what a synchronous standby costs the write
// gate, side by side in one run (scripts/bench-failover.sh prints the
// ratios): the same jobs written to
//   - standalone: pgtest's private cluster (no replication);
//   - ha-local-commit: the primary of a pg_auto_failover pair, with
//     synchronous_commit = local (the commit waits for no standby: the
//     same server and WAL stream as ha-sync, without the wait);
//   - ha-sync: the same primary as configured by pg_auto_failover, each
//     commit waiting for the synchronous standby to flush it;
//   - ha-sync-ack1: ha-sync with the durable acknowledgement
//     (RequireReplicas 1, serve --ack-replicas 1): after the commit the
//     session reads its position and polls pg_stat_replication; the
//     standby has it already, so the wait is one query;
//   - ha-local-commit-ack1: ha-local-commit with the durable
//     acknowledgement: a primary that does not wait for its standby (an
//     asynchronous one, pg_auto_failover's wait_primary), whose job waits
//     for the replication before its ack.
//
// Each reports ack-wait-ms, the mean wait of the durable acknowledgement
// per job (geoingest_ack_replicas_wait_seconds).
//
// Small jobs (10 features: the commit's round trip dominates) and large
// ones (GEOINGEST_BENCH_N features, default 20000). Skipped without
// pg_autoctl.
func BenchmarkReplication(b *testing.B) {
	n := 20000
	if s := os.Getenv("GEOINGEST_BENCH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	small, large := filepath.Join(dir, "small.geojson"), filepath.Join(dir, "large.geojson")
	writeBenchParcels(b, small, 10, false)
	writeBenchParcels(b, large, n, false)
	c := hatest.Start(b, hatest.Options{})
	servers := []struct {
		name, url, commit string
		ack               int
	}{
		{"standalone", pgtest.NewDB(b), "", 0},
		{"ha-local-commit", c.URL(), "local", 0},
		{"ha-sync", c.URL(), "", 0},
		{"ha-sync-ack1", c.URL(), "", 1},
		{"ha-local-commit-ack1", c.URL(), "local", 1},
	}
	for _, size := range []struct {
		name     string
		path     string
		features int
	}{{"small", small, 10}, {"large", large, n}} {
		for _, srv := range servers {
			b.Run(fmt.Sprintf("%s/%s", size.name, srv.name), func(b *testing.B) {
				cfg, err := pgxpool.ParseConfig(srv.url)
				if err != nil {
					b.Fatal(err)
				}
				if srv.commit != "" {
					cfg.ConnConfig.RuntimeParams["synchronous_commit"] = srv.commit
				}
				pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				metrics := ingest.NewMetrics(prometheus.NewRegistry())
				svc := newTestService(pool, metrics, slog.New(slog.NewTextHandler(io.Discard, nil)))
				svc.NoReportRefresh = true
				if srv.ack > 0 {
					store := svc.Store.(*Store)
					store.RequireReplicas(ingest.ReplicaWait{Replicas: srv.ack})
					svc.Durable = store
				}
				ctx := context.Background()
				run := time.Now().UnixNano() // b.N's rounds share the database
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					p := ingest.DefaultParams("parcels")
					p.PipelineVersion = fmt.Sprintf("bench-%s-%d-%d", srv.name, run, i) // a new key each time
					src, f, err := localfs.Files{}.Source(size.path)
					if err != nil {
						b.Fatal(err)
					}
					job, err := ingest.NewJob(src, p, f)
					if err != nil {
						b.Fatal(err)
					}
					if r := svc.Run(ctx, job); r.Err != nil || r.Features != int64(size.features) {
						b.Fatalf("outcome %s, %d features: %v", r.Outcome, r.Features, r.Err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
				b.ReportMetric(float64(size.features)*float64(b.N)/b.Elapsed().Seconds(), "features/s")
				if srv.ack > 0 {
					var m dto.Metric
					if err := metrics.ReplicaWait.Write(&m); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(1000*m.GetHistogram().GetSampleSum()/float64(b.N), "ack-wait-ms")
				}
			})
		}
	}
}
