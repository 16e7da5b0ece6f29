package postgis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// fileFetcher fetches a local file as if it were an object version.
type fileFetcher struct{ path string }

func (f fileFetcher) Fetch(_ context.Context, dir string) (ingest.Fetched, error) {
	dst := filepath.Join(dir, filepath.Base(f.path))
	out, err := os.Create(dst)
	if err != nil {
		return ingest.Fetched{}, err
	}
	defer out.Close()
	in, err := os.Open(f.path)
	if err != nil {
		return ingest.Fetched{}, err
	}
	defer in.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	return ingest.Fetched{Path: dst, ContentHash: hex.EncodeToString(h.Sum(nil)), Size: n}, err
}

// squares writes a GeoJSON file of n squares of side size degrees near
// Berlin and returns its path.
func squares(t *testing.T, name string, n int, size float64) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		x, y := 13.0+float64(i)*0.01, 52.5
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"i":%d},"geometry":{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}}`,
			i, x, y, x+size, y, x+size, y+size, x, y+size, x, y)
	}
	b.WriteString("]}")
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// version is one version of the object parcels/x.geojson in bucket b.
func version(t *testing.T, path, token, sequencer string, p ingest.Params) ingest.Job {
	t.Helper()
	job, err := ingest.NewJob(ingest.Source{Bucket: "b", Key: "parcels/x.geojson", VersionToken: token,
		Order: ingest.OrderFromSequencer(sequencer)}, p, fileFetcher{path})
	require.NoError(t, err)
	return job
}

func deleteVersion(t *testing.T, token, sequencer string) ingest.Job {
	t.Helper()
	job, err := ingest.NewDeleteJob(ingest.Source{Bucket: "b", Key: "parcels/x.geojson", VersionToken: token,
		Order: ingest.OrderFromSequencer(sequencer)}, ingest.DefaultParams("parcels"))
	require.NoError(t, err)
	return job
}

// sourceState is what the source's current generation holds.
type sourceState struct {
	Current string
	Rows    int64
	Area    float64
}

func currentOf(t *testing.T, b *bundle) sourceState {
	t.Helper()
	var s sourceState
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT coalesce(s.current_job_id, ''),
		       (SELECT count(*) FROM parcels p WHERE p.job_ref = geoingest_job_ref(s.current_job_id)),
		       (SELECT coalesce(sum(ST_Area(p.geom::geography)), 0) FROM parcels p WHERE p.job_ref = geoingest_job_ref(s.current_job_id))
		FROM sources s WHERE s.source_bucket = 'b' AND s.source_key = 'parcels/x.geojson'`).Scan(&s.Current, &s.Rows, &s.Area))
	var all int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM parcels`).Scan(&all))
	require.Equal(t, s.Rows, all, "rows of other generations are left behind")
	return s
}

func requireVerified(t *testing.T, b *bundle) {
	t.Helper()
	v, err := b.store.Verify(context.Background())
	require.NoError(t, err)
	require.True(t, v.OK(), "verify: %v", v.Problems)
}

func TestNewestVersionWins(t *testing.T) {
	t.Parallel()
	v1path := squares(t, "v1.geojson", 3, 0.001)
	v2path := squares(t, "v2.geojson", 5, 0.002)
	for _, order := range []string{"old-then-new", "new-then-old", "concurrent"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			v1 := func() ingest.Job {
				return version(t, v1path, "v1", "0055AED6DCD90281E5", ingest.DefaultParams("parcels"))
			}
			// A longer sequencer is newer once padded.
			v2 := func() ingest.Job {
				return version(t, v2path, "v2", "0100AED6DCD90281E5", ingest.DefaultParams("parcels"))
			}
			switch order {
			case "old-then-new":
				require.Equal(t, ingest.Written, b.svc.Run(ctx, v1()).Outcome)
				res := b.svc.Run(ctx, v2())
				require.Equal(t, ingest.Written, res.Outcome)
				require.Equal(t, v1().ID, res.Replaced)
			case "new-then-old":
				require.Equal(t, ingest.Written, b.svc.Run(ctx, v2()).Outcome)
				require.Equal(t, ingest.Superseded, b.svc.Run(ctx, v1()).Outcome)
			case "concurrent":
				var jobs []ingest.Job
				for i := 0; i < 4; i++ {
					jobs = append(jobs, v1(), v2())
				}
				rand.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
				var wg sync.WaitGroup
				for _, j := range jobs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						svc := newTestService(b.pool, b.metrics, b.svc.Log)
						require.NoError(t, svc.Run(ctx, j).Err)
					}()
				}
				wg.Wait()
			}
			// Redeliveries of both change nothing.
			for i := 0; i < 2; i++ {
				require.True(t, b.svc.Run(ctx, v1()).Outcome.Duplicate())
				require.True(t, b.svc.Run(ctx, v2()).Outcome.Duplicate())
			}
			s := currentOf(t, b)
			require.Equal(t, v2().ID, s.Current)
			require.EqualValues(t, 5, s.Rows)
			require.InEpsilon(t, 5*(0.002*67.77e3)*(0.002*111.25e3), s.Area, 0.01, "5 squares of 0.002° at 52.5°N")
			var want float64
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT total_area_m2 FROM jobs WHERE job_id = $1`, v2().ID).Scan(&want))
			require.InDelta(t, want, s.Area, 1e-6, "the source's area is the newest file's")
			requireVerified(t, b)
		})
	}
}

func TestOrderFromSequencerPads(t *testing.T) {
	t.Parallel()
	require.Less(t, ingest.OrderFromSequencer("FF"), ingest.OrderFromSequencer("0100"))
	require.Less(t, ingest.OrderFromSequencer("0055AED6DCD90281E5"), ingest.OrderFromSequencer("0055AED6DCD90281E6"))
	require.Less(t, ingest.OrderFromSequencer("0055aed6dcd90281e5"), ingest.OrderFromSequencer("0055AED6DCD90281F0"), "hex case does not matter")
}

func TestDeleteRetiresTheCurrentGeneration(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	v1 := version(t, squares(t, "v1.geojson", 3, 0.001), "v1", "10", ingest.DefaultParams("parcels"))
	require.Equal(t, ingest.Written, b.svc.Run(ctx, v1).Outcome)

	del := deleteVersion(t, "delete:20", "20")
	res := b.svc.Run(ctx, del)
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Retired, res.Outcome)
	require.Equal(t, v1.ID, res.Replaced)
	require.Equal(t, sourceState{}, currentOf(t, b))
	var st string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM jobs WHERE job_id = $1`, v1.ID).Scan(&st))
	require.Equal(t, "retired", st)
	requireVerified(t, b)

	// Duplicates of the delete and of v1 change nothing; an older version
	// arriving late does not resurrect the object.
	require.True(t, b.svc.Run(ctx, deleteVersion(t, "delete:20", "20")).Outcome.Duplicate())
	require.True(t, b.svc.Run(ctx, v1).Outcome.Duplicate())
	v0 := version(t, squares(t, "v0.geojson", 2, 0.001), "v0", "05", ingest.DefaultParams("parcels"))
	require.Equal(t, ingest.Superseded, b.svc.Run(ctx, v0).Outcome)
	require.Equal(t, sourceState{}, currentOf(t, b))

	// A newer version comes back; an older delete arriving late is
	// superseded.
	v2 := version(t, squares(t, "v2.geojson", 4, 0.001), "v2", "30", ingest.DefaultParams("parcels"))
	require.Equal(t, ingest.Written, b.svc.Run(ctx, v2).Outcome)
	require.Equal(t, ingest.Superseded, b.svc.Run(ctx, deleteVersion(t, "delete:15", "15")).Outcome)
	s := currentOf(t, b)
	require.Equal(t, v2.ID, s.Current)
	require.EqualValues(t, 4, s.Rows)
	requireVerified(t, b)
}

func TestNewKeyKeepsBothPipelineVersions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	path := squares(t, "x.geojson", 3, 0.001)
	p1 := ingest.DefaultParams("parcels")
	p2 := ingest.DefaultParams("parcels")
	p2.PipelineVersion = "2"
	j1, j2 := version(t, path, "v1", "10", p1), version(t, path, "v1", "10", p2)
	require.NotEqual(t, j1.ID, j2.ID, "a new pipeline version is a new key")
	require.Equal(t, ingest.Written, b.svc.Run(ctx, j1).Outcome)
	require.Equal(t, ingest.Written, b.svc.Run(ctx, j2).Outcome)

	rows, err := b.pool.Query(ctx, `SELECT j.pipeline_version, count(*) FROM parcels p JOIN jobs j USING (job_ref)
		JOIN sources s ON s.current_job_id = j.job_id GROUP BY 1 ORDER BY 1`)
	require.NoError(t, err)
	got := map[string]int64{}
	for rows.Next() {
		var pv string
		var n int64
		require.NoError(t, rows.Scan(&pv, &n))
		got[pv] = n
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]int64{"1": 3, "2": 3}, got, "both pipeline versions' results stay, each current")
	requireVerified(t, b)
}

func TestReplaceIfMatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	bad := version(t, squares(t, "bad.geojson", 3, 0.001), "v1", "10", ingest.DefaultParams("parcels"))
	require.Equal(t, ingest.Written, b.svc.Run(ctx, bad).Outcome)
	before := currentOf(t, b)
	fixed := squares(t, "fixed.geojson", 6, 0.001)

	stale := ingest.DefaultParams("parcels")
	stale.Replaces = strings.Repeat("0", 64)
	res := b.svc.Run(ctx, version(t, fixed, "v1", "10", stale))
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Equal(t, ingest.Precondition, ingest.KindOf(res.Err))
	require.Contains(t, res.Err.Error(), "precondition failed")
	require.Contains(t, res.Err.Error(), bad.ID)
	require.Equal(t, before, currentOf(t, b), "a failed precondition changes nothing")

	match := ingest.DefaultParams("parcels")
	match.Replaces = bad.ID
	repair := version(t, fixed, "v1", "10", match)
	res = b.svc.Run(ctx, repair)
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)
	require.Equal(t, bad.ID, res.Replaced)
	s := currentOf(t, b)
	require.Equal(t, repair.ID, s.Current)
	require.EqualValues(t, 6, s.Rows)
	requireVerified(t, b)
	// The repair, delivered again, is a duplicate.
	require.True(t, b.svc.Run(ctx, version(t, fixed, "v1", "10", match)).Outcome.Duplicate())
}

func TestCompareOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{ingest.OrderFromSequencer("FF"), ingest.OrderFromSequencer("0100"), -1},
		// Two events: the sequencer decides, even against the clock.
		{ingest.OrderFromEvent(t1, "0A"), ingest.OrderFromEvent(t0, "0B"), -1},
		// A listed object (time only) against an event: the time decides.
		{ingest.OrderFromTime(t0), ingest.OrderFromEvent(t1, "0A"), -1},
		{ingest.OrderFromTime(t1), ingest.OrderFromEvent(t0, "0B"), 1},
		{ingest.OrderFromTime(t0), ingest.OrderFromTime(t1), -1},
		{"", ingest.OrderFromTime(t0), -1},
		{ingest.OrderFromEvent(t0, "0A"), ingest.OrderFromEvent(t0, "0a"), 0},
	} {
		require.Equal(t, tc.want, ingest.CompareOrder(tc.a, tc.b), "%q vs %q", tc.a, tc.b)
		require.Equal(t, -tc.want, ingest.CompareOrder(tc.b, tc.a), "%q vs %q", tc.b, tc.a)
	}
}
