package postgis

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

const epinay = "../../testdata/corpus/epinay_cadastre_parcels/cadastre-91216-parcelles.json"

type bundle struct {
	pool    *pgxpool.Pool
	svc     *ingest.Service
	store   *Store // svc's
	metrics *ingest.Metrics
	logs    *testfiles.SyncBuffer
}

// setup gives a test its own database and a Service on it.
func setup(t *testing.T) *bundle {
	t.Helper()
	return setupOn(t, pgtest.NewDB(t))
}

// setupOn is setup on the database of url.
func setupOn(t *testing.T, url string) *bundle {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 40
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	logs := &testfiles.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	metrics := ingest.NewMetrics(prometheus.NewRegistry())
	svc := newTestService(pool, metrics, log)
	return &bundle{pool: pool, metrics: metrics, logs: logs, svc: svc, store: svc.Store.(*Store)}
}

func newTestService(pool *pgxpool.Pool, metrics *ingest.Metrics, log *slog.Logger) *ingest.Service {
	svc := ingest.NewService(NewStore(pool, metrics, log), metrics, log)
	svc.Lease = time.Minute
	return svc
}

// hooked returns ctx with a test hook for the jobs of the worker owner:
// beforeWrite (when not nil) is called before each one's write gate, and
// with noHeartbeat its lease is never renewed.
func hooked(ctx context.Context, owner string, noHeartbeat bool, beforeWrite func()) context.Context {
	return ingest.WithHook(ctx, func(point string, w ingest.HookWhere) bool {
		if w.Owner != owner {
			return false
		}
		switch point {
		case ingest.HookBeforeWrite:
			if beforeWrite != nil {
				beforeWrite()
			}
		case ingest.HookHeartbeat:
			return noHeartbeat
		}
		return false
	})
}

func localJob(t *testing.T, path string, p ingest.Params) ingest.Job {
	t.Helper()
	src, f, err := localfs.Files{}.Source(path)
	require.NoError(t, err)
	job, err := ingest.NewJob(src, p, f)
	require.NoError(t, err)
	return job
}

// tableState is what a duplicate must not change. The area is summed in
// id order: a parallel plan over the partitions would sum in any order and
// differ in the last bits from one query to the next.
type tableState struct {
	Jobs, Parcels int64
	Area          float64
	MaxID         int64
}

func state(t *testing.T, pool *pgxpool.Pool) tableState {
	t.Helper()
	var s tableState
	require.NoError(t, pool.QueryRow(context.Background(), `
		SELECT (SELECT count(*) FROM jobs), count(*), coalesce(sum(ST_Area(geom::geography) ORDER BY id), 0), coalesce(max(id), 0)
		FROM parcels`).Scan(&s.Jobs, &s.Parcels, &s.Area, &s.MaxID))
	return s
}

func TestIngestEpinayExactlyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	job := localJob(t, epinay, ingest.DefaultParams("parcels"))

	res := b.svc.Run(ctx, job)
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)
	require.EqualValues(t, 4241, res.Features)

	after := state(t, b.pool)
	require.EqualValues(t, 1, after.Jobs)
	require.EqualValues(t, 4241, after.Parcels)
	require.InDelta(t, 3836490, after.Area, 1.0, "corpus oracle: SUM(ST_Area(geom::geography))")

	var ledgerCount int64
	var ledgerArea float64
	var claimState string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT feature_count, total_area_m2, c.state FROM jobs j JOIN claims c USING (job_id) WHERE job_id = $1`, job.ID).
		Scan(&ledgerCount, &ledgerArea, &claimState))
	require.EqualValues(t, 4241, ledgerCount)
	require.True(t, areaSumWithin(ledgerArea, after.Area, 4241), "ledger %.17g, SUM(ST_Area) %.17g", ledgerArea, after.Area)
	require.Equal(t, "COMMITTED", claimState)

	// A second and third delivery change nothing.
	for i := 0; i < 2; i++ {
		again := b.svc.Run(ctx, localJob(t, epinay, ingest.DefaultParams("parcels")))
		require.NoError(t, again.Err)
		require.Equal(t, ingest.AlreadyPresent, again.Outcome)
		require.Equal(t, job.ID, again.JobID)
		require.Equal(t, after, state(t, b.pool))
	}
	require.Equal(t, 2.0, testutil.ToFloat64(b.metrics.Claims.WithLabelValues("duplicate")))
	require.Zero(t, testutil.ToFloat64(b.metrics.Claims.WithLabelValues("held")))
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.Downloads), "duplicates stopped at the claim gate download nothing")
}

func TestSixteenConcurrentIngests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const n = 16
	results := make([]ingest.Result, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Each goroutine is its own worker, with its own owner id.
			svc := newTestService(b.pool, b.metrics, b.svc.Log)
			job := localJob(t, epinay, ingest.DefaultParams("parcels"))
			<-start
			results[i] = svc.Run(ctx, job)
		}(i)
	}
	close(start)
	wg.Wait()
	counts := map[ingest.Outcome]int{}
	for i, r := range results {
		require.NoError(t, r.Err)
		counts[r.Outcome]++
		if r.Outcome == ingest.Held {
			// Not done: the delivery must come back. Now that the
			// writer has committed, it is a duplicate.
			require.Positive(t, r.RetryAfter)
			require.NotEmpty(t, r.HeldBy)
			again := newTestService(b.pool, b.metrics, b.svc.Log).Run(ctx, localJob(t, epinay, ingest.DefaultParams("parcels")))
			require.Equal(t, ingest.AlreadyPresent, again.Outcome, "held delivery %d, retried", i)
		}
	}
	require.Equal(t, 1, counts[ingest.Written], "%v", counts)
	require.Equal(t, n-1, counts[ingest.AlreadyPresent]+counts[ingest.Held], "%v", counts)
	s := state(t, b.pool)
	require.EqualValues(t, 1, s.Jobs)
	require.EqualValues(t, 4241, s.Parcels)
}

// TestWriteGateStopsConcurrentDuplicate bypasses the claim gate (two workers
// both believe they hold the claim) to show that the write gate alone keeps
// the job exactly once: the loser blocks on the ledger's unique index and
// then reports already-present.
func TestWriteGateStopsConcurrentDuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const n = 6
	var wg sync.WaitGroup
	outcomes := make([]ingest.Outcome, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			job := localJob(t, epinay, ingest.DefaultParams("parcels"))
			f, err := job.Fetch.Fetch(ctx, t.TempDir())
			require.NoError(t, err)
			r, err := openLocal(f.Path)
			require.NoError(t, err)
			defer r.Close()
			wr, err := b.svc.Store.Write(ctx, job, "worker", ingest.LogLayers(r), f)
			require.NoError(t, err)
			outcomes[i] = wr.Outcome
		}(i)
	}
	wg.Wait()
	written := 0
	for _, o := range outcomes {
		if o == ingest.Written {
			written++
		} else {
			require.Equal(t, ingest.AlreadyPresent, o)
		}
	}
	require.Equal(t, 1, written)
	require.EqualValues(t, 4241, state(t, b.pool).Parcels)
}

// TestStolenLease: worker A's lease expires mid-job (no heartbeat); worker B
// takes the claim over; A commits first and detects the stolen lease; B is
// then stopped at the write gate. The features land exactly once.
func TestStolenLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	a := newTestService(b.pool, b.metrics, b.svc.Log)
	a.Lease = 500 * time.Millisecond
	bw := newTestService(b.pool, b.metrics, b.svc.Log)

	aReady, bClaimed, aDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	actx := hooked(ctx, a.Owner, true, func() {
		close(aReady)
		<-bClaimed // B has taken over our expired lease
	})
	bctx := hooked(ctx, bw.Owner, false, func() {
		close(bClaimed)
		<-aDone // let A commit first
	})
	var resA, resB ingest.Result
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		resA = a.Run(actx, localJob(t, epinay, ingest.DefaultParams("parcels")))
		close(aDone)
	}()
	go func() {
		defer wg.Done()
		<-aReady
		for { // wait for A's lease to expire, then claim
			time.Sleep(200 * time.Millisecond)
			job := localJob(t, epinay, ingest.DefaultParams("parcels"))
			if c, err := bw.Store.Claim(ctx, job, "probe", time.Millisecond); err == nil && c.Result == ingest.ClaimWon {
				// The probe claim expires at once; B's real Run claims next.
				time.Sleep(5 * time.Millisecond)
				resB = bw.Run(bctx, job)
				return
			}
		}
	}()
	wg.Wait()
	require.NoError(t, resA.Err)
	require.NoError(t, resB.Err)
	require.Equal(t, ingest.Written, resA.Outcome)
	require.Equal(t, ingest.AlreadyPresent, resB.Outcome)
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.LeasesStolen))
	require.Contains(t, b.logs.String(), `"level":"ERROR","msg":"stolen lease`)
	s := state(t, b.pool)
	require.EqualValues(t, 1, s.Jobs)
	require.EqualValues(t, 4241, s.Parcels)
	var claimState string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT state FROM claims`).Scan(&claimState))
	require.Equal(t, "COMMITTED", claimState)
}

func TestMalformedGeoJSONFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	bad := filepath.Join(dir, "broken.geojson")
	require.NoError(t, os.WriteFile(bad, []byte(`{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"a":1},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}},
{"type":"Feature","properties":{"a":2},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,`), 0o644))
	job := localJob(t, bad, ingest.DefaultParams("parcels"))
	res := b.svc.Run(ctx, job)
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Equal(t, ingest.Permanent, ingest.KindOf(res.Err))
	require.Contains(t, res.Err.Error(), "file://"+bad, "the error names the file")

	var st, reason string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT state, last_error FROM claims WHERE job_id = $1`, job.ID).Scan(&st, &reason))
	require.Equal(t, "FAILED", st)
	require.Equal(t, res.Err.Error(), reason)
	s := state(t, b.pool)
	require.Zero(t, s.Jobs, "no ledger row: the first feature was rolled back with the rest")
	require.Zero(t, s.Parcels)
}

func TestUnknownCRSFailsUnlessSourceSRIDGiven(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// A shapefile without .prj in lon/lat: the reader must not guess.
	shp := "../../testdata/corpus/blockgroups_noprj/blockgroups.shp"
	res := b.svc.Run(ctx, localJob(t, shp, ingest.DefaultParams("parcels")))
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Contains(t, res.Err.Error(), "unknown CRS")
	require.Zero(t, state(t, b.pool).Parcels)

	p := ingest.DefaultParams("parcels")
	p.SourceSRID = 4326
	res = b.svc.Run(ctx, localJob(t, shp, p))
	require.NoError(t, res.Err)
	require.EqualValues(t, 663, res.Features)
	require.Less(t, math.Abs(res.AreaM2-166117573)/166117573, 1e-4)
}

// TestHeartbeatKeepsLease: a job that runs for several lease periods keeps
// its claim through heartbeats, so a duplicate delivery meanwhile loses at
// the claim gate instead of taking the job over.
func TestHeartbeatKeepsLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	slow := newTestService(b.pool, b.metrics, b.svc.Log)
	// A lease of 3 s, renewed every second: at 600 ms a loaded CI machine
	// (load 30) delayed a renewal past the lease, and the other worker
	// took the job over, as a lapsed lease allows.
	slow.Lease = 3 * time.Second
	inWrite := make(chan struct{})
	release := make(chan struct{})
	sctx := hooked(ctx, slow.Owner, false, func() {
		close(inWrite)
		<-release
	})
	done := make(chan ingest.Result)
	go func() { done <- slow.Run(sctx, localJob(t, epinay, ingest.DefaultParams("parcels"))) }()
	<-inWrite
	other := newTestService(b.pool, b.metrics, b.svc.Log)
	for i := 0; i < 6; i++ { // 9 s: three lease periods
		time.Sleep(1500 * time.Millisecond)
		res := other.Run(ctx, localJob(t, epinay, ingest.DefaultParams("parcels")))
		require.Equal(t, ingest.Held, res.Outcome, "attempt %d", i)
		// Retried once what is left of the live lease has passed.
		require.Positive(t, res.RetryAfter)
		require.LessOrEqual(t, res.RetryAfter, slow.Lease+1300*time.Millisecond)
		require.Equal(t, slow.Owner, res.HeldBy)
	}
	close(release)
	res := <-done
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)
	require.Zero(t, testutil.ToFloat64(b.metrics.LeasesStolen))
}

// TestMidCopyParseErrorRollsBack breaks a file after thousands of
// features, well past the first COPY buffers the server has already
// inserted, on both write paths (a partition of the job's own, the shared
// partition), as a new version of a source whose first version is
// committed: the job fails permanently, and nothing of it remains (no
// ledger row, no rows, no partition), and the first version is still the
// source's current generation, intact.
func TestMidCopyParseErrorRollsBack(t *testing.T) {
	t.Parallel()
	for name, own := range map[string]int64{"own partition": 1, "shared partition": 1 << 40} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.store.OwnPartitionBytes = own
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "parcels.geojson")
			writeParcels := func(n int, broken bool) {
				var sb strings.Builder
				sb.WriteString(`{"type":"FeatureCollection","features":[`)
				for i := 0; i < n; i++ {
					x, y := 2+float64(i%100)*0.001, 48+float64(i/100)*0.001
					fmt.Fprintf(&sb, `{"type":"Feature","properties":{"i":%d},"geometry":{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}},`,
						i, x, y, x+0.0005, y, x+0.0005, y+0.0005, x, y)
				}
				if broken {
					sb.WriteString(`{"type":"Feature","properties":{"i":-1},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,`)
				} else {
					sb.WriteString(`{"type":"Feature","properties":{"i":-1},"geometry":null}]}`)
				}
				require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o644))
			}
			writeParcels(10, false)
			v1 := b.svc.Run(ctx, localJob(t, path, ingest.DefaultParams("parcels")))
			require.NoError(t, v1.Err)
			require.Equal(t, ingest.Written, v1.Outcome)

			writeParcels(5000, true)
			job := localJob(t, path, ingest.DefaultParams("parcels"))
			res := b.svc.Run(ctx, job)
			require.Equal(t, ingest.Failed, res.Outcome)
			require.Equal(t, ingest.Permanent, ingest.KindOf(res.Err), "%v", res.Err)

			var jobs, rows, tables int64
			var current string
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM parcels),
				(SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relname LIKE 'parcels\_job\_%'),
				(SELECT current_job_id FROM sources)`).Scan(&jobs, &rows, &tables, &current))
			require.EqualValues(t, 1, jobs, "only the first version's ledger row")
			require.EqualValues(t, 10, rows, "only the first version's rows")
			require.Equal(t, v1.JobID, current)
			if own == 1 {
				require.EqualValues(t, 1, tables, "only the first version's partition")
			} else {
				require.Zero(t, tables)
			}
			v, err := b.store.Verify(ctx)
			require.NoError(t, err)
			require.True(t, v.OK(), "%v", v.Problems)
		})
	}
}
