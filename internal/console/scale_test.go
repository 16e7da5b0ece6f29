package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis"
	"github.com/geoingest/geoingest/internal/console"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// tracer remembers the SQL and arguments of the console's queries, so
// that a test can EXPLAIN exactly what the console ran.
type tracer struct {
	mu   sync.Mutex
	last map[string]pgx.TraceQueryStartData
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if name, ok := strings.CutPrefix(d.SQL, "-- name: "); ok {
		name, _, _ = strings.Cut(name, " ")
		tr.mu.Lock()
		tr.last[name] = d
		tr.mu.Unlock()
	}
	return ctx
}

func (tr *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// scaleDB is a database holding a generated history of n jobs over 30
// days, their claims first taken at distinct times: sources with two
// generations each (the older replaced, the newer current), 1 in 20
// jobs failed (a claim and no ledger row), and claims in flight (live
// leases) and lease-expired. The ledger rows are made by SQL, not by
// ingesting files: the console reads the ledger, whatever wrote it.
type scaleDB struct {
	pool                               *pgxpool.Pool
	tr                                 *tracer
	n, failed, live, expired, replaced int
}

func newScaleDB(t testing.TB, n int) *scaleDB {
	t.Helper()
	u := pgtest.NewDB(t)
	cfg, err := pgxpool.ParseConfig(u)
	require.NoError(t, err)
	tr := &tracer{last: map[string]pgx.TraceQueryStartData{}}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ctx := context.Background()
	// Job i: claimed at now - 30 days + i seconds * (30 days / n); every
	// 20th failed, the 5 newest in flight, the 5 before them with
	// expired leases; committed jobs alternate between the two
	// generations of source i/2.
	_, err = pool.Exec(ctx, `
WITH g AS (
    SELECT i, encode(sha256(convert_to('job ' || i, 'UTF8')), 'hex') AS job_id,
           now() - interval '30 days' + (i * (interval '30 days' / $1::int)) AS at,
           CASE WHEN i % 20 = 0 THEN 'FAILED'
                WHEN i >= $1::int - 5 THEN 'LIVE'
                WHEN i >= $1::int - 10 THEN 'EXPIRED'
                ELSE 'COMMITTED' END AS kind
    FROM generate_series(0, $1::int - 1) i
), c AS (
    INSERT INTO claims (job_id, state, owner, lease_until, attempts, last_error, source_bucket, source_key, created_at, updated_at)
    SELECT job_id, CASE kind WHEN 'FAILED' THEN 'FAILED' WHEN 'COMMITTED' THEN 'COMMITTED' ELSE 'CLAIMED' END,
           'worker-' || (i % 7), CASE kind WHEN 'LIVE' THEN now() + interval '4 minutes' ELSE at END,
           1 + (i % 3), CASE kind WHEN 'FAILED' THEN 'file ' || i || ': unknown CRS' END,
           'uploads', 'parcels/' || (i / 2) || '.geojson', at, at
    FROM g
)
INSERT INTO jobs (job_id, source_bucket, source_key, version_token, params, pipeline, pipeline_version,
                  target_table, status, feature_count, total_area_m2, content_hash, committed_at, write_seconds)
SELECT job_id, 'uploads', 'parcels/' || (i / 2) || '.geojson', 'v' || (i % 2), '{}', 'geoingest', '1',
       'parcels', CASE WHEN i % 2 = 1 THEN 'current' ELSE 'replaced' END,
       100 + i % 50, 1000.0 * (i % 97), md5(job_id), at, 0.5
FROM g WHERE kind = 'COMMITTED'`, n)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
INSERT INTO sources (source_bucket, source_key, target_table, pipeline_version, current_job_id, updated_at)
SELECT DISTINCT ON (source_key) source_bucket, source_key, target_table, pipeline_version,
       CASE WHEN status = 'current' THEN job_id END, committed_at
FROM jobs ORDER BY source_key, (status = 'current') DESC, committed_at DESC`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ANALYZE")
	require.NoError(t, err)
	s := &scaleDB{pool: pool, tr: tr, n: n}
	for i := 0; i < n; i++ {
		switch {
		case i%20 == 0:
			s.failed++
		case i >= n-5:
			s.live++
		case i >= n-10:
			s.expired++
		case i%2 == 0:
			s.replaced++
		}
	}
	return s
}

// explain is the plan of the last run of the named query, as text.
func (s *scaleDB) explain(t *testing.T, name string) string {
	t.Helper()
	s.tr.mu.Lock()
	d, ok := s.tr.last[name]
	s.tr.mu.Unlock()
	require.True(t, ok, "query %s was not run", name)
	rows, err := s.pool.Query(context.Background(), "EXPLAIN "+d.SQL, d.Args...)
	require.NoError(t, err)
	var b strings.Builder
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		b.WriteString(line + "\n")
	}
	require.NoError(t, rows.Err())
	return b.String()
}

func fetch(t testing.TB, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, string(b))
	if v != nil {
		require.NoError(t, json.Unmarshal(b, v))
	}
}

// TestConsoleAtScale pages the API over 12 000 jobs: every job comes
// exactly once, newest claim first, for all jobs and for one state; the
// claim states are told apart by their leases; and the pages are read off
// the indexes of migration 0010, not by scanning the claims.
func TestConsoleAtScale(t *testing.T) {
	s := newScaleDB(t, 12000)
	srv := httptest.NewServer(console.New(console.Options{Reader: postgis.NewConsole(s.pool)}))
	defer srv.Close()

	pageAll := func(query string) []ingest.JobSummary {
		var all []ingest.JobSummary
		cursor := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 100)
			var p ingest.JobPage
			fetch(t, srv.URL+"/api/jobs?limit=500&"+query+"&cursor="+url.QueryEscape(cursor), &p)
			require.LessOrEqual(t, len(p.Jobs), 500)
			all = append(all, p.Jobs...)
			if cursor = p.Next; cursor == "" {
				return all
			}
		}
	}
	all := pageAll("")
	require.Len(t, all, s.n)
	seen := map[string]bool{}
	for i, j := range all {
		require.False(t, seen[j.JobID], "job %s twice", j.JobID)
		seen[j.JobID] = true
		if i > 0 {
			require.False(t, j.ClaimedAt.After(all[i-1].ClaimedAt), "newest first")
		}
	}
	require.True(t, sort.SliceIsSorted(all, func(a, b int) bool { return all[a].ClaimedAt.After(all[b].ClaimedAt) }))
	require.Equal(t, ingest.StateInFlight, all[0].State)
	require.Equal(t, ingest.StateLeaseExpired, all[5].State)
	require.Equal(t, "current", all[10].State)
	plan := s.explain(t, "ConsoleJobs")
	require.Contains(t, plan, "claims_created_idx", plan)
	require.NotContains(t, plan, "Seq Scan on claims", plan)

	failed := pageAll("state=failed")
	require.Len(t, failed, s.failed)
	for _, j := range failed {
		require.Equal(t, ingest.StateFailed, j.State)
		require.Contains(t, j.Reason, "unknown CRS")
		require.Contains(t, j.Hint, "source-srid")
	}
	plan = s.explain(t, "ConsoleJobs")
	require.Contains(t, plan, "claims_state_created_idx", plan)
	require.NotContains(t, plan, "Seq Scan on claims", plan)
	require.Len(t, pageAll("state=in-flight"), s.live)
	require.Len(t, pageAll("state=lease-expired"), s.expired)
	require.Len(t, pageAll("state=replaced"), s.replaced)

	var claims struct {
		Claims []ingest.ClaimInfo `json:"claims"`
	}
	fetch(t, srv.URL+"/api/claims", &claims)
	require.Len(t, claims.Claims, s.live+s.expired)
	for i, c := range claims.Claims {
		if i < s.live {
			require.Equal(t, ingest.StateInFlight, c.State)
			require.Greater(t, c.LeaseLeftSeconds, 200.0)
		} else {
			require.Equal(t, ingest.StateLeaseExpired, c.State)
			require.Zero(t, c.LeaseLeftSeconds)
		}
	}

	var sp ingest.SourcePage
	fetch(t, srv.URL+"/api/sources?limit=100&history=2", &sp)
	require.Len(t, sp.Sources, 100)
	require.NotEmpty(t, sp.Next)
	for _, src := range sp.Sources {
		require.Len(t, src.History, int(src.Generations))
	}
	plan = s.explain(t, "ConsoleSources")
	require.Contains(t, plan, "sources_updated_idx", plan)
	require.NotContains(t, plan, "Seq Scan on sources", plan)

	var ov ingest.Overview
	fetch(t, srv.URL+"/api/overview", &ov)
	require.Equal(t, int64(s.n), ov.Jobs)
	require.Equal(t, int64(s.failed), ov.States[ingest.StateFailed])

	resp, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}

// BenchmarkConsoleAPI measures the console's answers over a database of
// GEOINGEST_BENCH_JOBS jobs (default 10 000): the first page of jobs, a
// page deep in the history, the failures, sources, the overview and the
// whole HTML page, through HTTP.
func BenchmarkConsoleAPI(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("GEOINGEST_BENCH_JOBS")); err == nil && v > 0 {
		n = v
	}
	s := newScaleDB(b, n)
	srv := httptest.NewServer(console.New(console.Options{Reader: postgis.NewConsole(s.pool)}))
	defer srv.Close()
	var mid ingest.JobPage
	fetch(b, srv.URL+fmt.Sprintf("/api/jobs?limit=%d", n/2), &mid)
	deep := url.QueryEscape(mid.Next)
	for _, c := range []struct{ name, path string }{
		{"jobs", "/api/jobs"},
		{"jobs_deep", "/api/jobs?cursor=" + deep},
		{"failures", "/api/failures"},
		{"jobs_since_1d", "/api/jobs?since=24h"},
		{"sources", "/api/sources"},
		{"overview", "/api/overview"},
		{"page", "/"},
	} {
		b.Run(c.name, func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				fetch(b, srv.URL+c.path, nil)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/req")
		})
	}
}
