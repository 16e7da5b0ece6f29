package ingesttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// StoreSuite is the conformance suite of ingest.Store. open returns a
// store on a fresh, empty, migrated database, able to run StoreWriters
// writes at once (a PostGIS pool of at least 2*StoreWriters+2
// connections: a write may need a second connection while its transaction
// holds one); files is the FileSource whose jobs the suite writes (local
// GeoJSON files it creates).
// StoreWriters is how many writes StoreSuite runs at once.
const StoreWriters = 4

func StoreSuite(t *testing.T, open func(t *testing.T) ingest.Store, files ingest.FileSource) {
	ctx := context.Background()
	const lease = time.Minute
	// square is a feature collection of n small squares; the version v
	// changes the bytes.
	square := func(t *testing.T, name string, n, v int) string {
		t.Helper()
		body := `{"type":"FeatureCollection","features":[`
		for i := range n {
			if i > 0 {
				body += ","
			}
			x := 10 + float64(i)*0.01 + float64(v)*0.001
			body += fmt.Sprintf(`{"type":"Feature","properties":{"i":%d},"geometry":{"type":"Polygon","coordinates":[[[%g,50],[%g,50],[%g,50.005],[%g,50]]]}}`,
				i, x, x+0.005, x+0.005, x)
		}
		p := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(p, []byte(body+"]}"), 0o644))
		return p
	}
	job := func(t *testing.T, path string, order string) ingest.Job {
		t.Helper()
		src, f, err := files.Source(path)
		require.NoError(t, err)
		src.Key = "conformance/" + filepath.Base(path) // one source for the versions of one name
		if order != "" {
			src.Order = order
		}
		j, err := ingest.NewJob(src, ingest.DefaultParams("parcels"), f)
		require.NoError(t, err)
		return j
	}
	// write runs job through both gates as owner.
	write := func(t *testing.T, s ingest.Store, j ingest.Job, owner string) (ingest.WriteResult, error) {
		t.Helper()
		c, err := s.Claim(ctx, j, owner, lease)
		require.NoError(t, err)
		if c.Result == ingest.ClaimCommitted {
			return ingest.WriteResult{Outcome: ingest.AlreadyPresent}, nil
		}
		require.Equal(t, ingest.ClaimWon, c.Result)
		in, err := j.Fetch.Fetch(ctx, t.TempDir())
		require.NoError(t, err)
		r, err := geomio.Open(in.Path, geomio.Options{RegisterCRS: s.RegisterCRS})
		if err != nil {
			return ingest.WriteResult{}, err
		}
		defer r.Close()
		return s.Write(ctx, j, owner, r, in)
	}

	t.Run("ClaimGate", func(t *testing.T) {
		s := open(t)
		j := job(t, square(t, "claim.geojson", 1, 0), "")
		c, err := s.Claim(ctx, j, "a", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result)
		c, err = s.Claim(ctx, j, "b", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimHeld, c.Result, "a live lease is held, not a duplicate")
		require.Equal(t, "a", c.Owner)
		require.Greater(t, c.LeaseLeft, lease/2)
		require.LessOrEqual(t, c.LeaseLeft, lease)

		ok, err := s.Heartbeat(ctx, j.ID, "a", lease)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.Heartbeat(ctx, j.ID, "b", lease)
		require.NoError(t, err)
		require.False(t, ok, "b holds no claim")

		require.NoError(t, s.Release(ctx, j.ID, "b", "not b's"))
		c, err = s.Claim(ctx, j, "b", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimHeld, c.Result, "releasing a claim one does not hold does nothing")
		require.NoError(t, s.Release(ctx, j.ID, "a", "transient"))
		c, err = s.Claim(ctx, j, "b", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result, "a released claim is won at once")

		require.NoError(t, s.Fail(ctx, j.ID, "permanent"))
		c, err = s.Claim(ctx, j, "c", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result, "a FAILED claim is claimed again")
	})
	t.Run("AnExpiredLeaseIsTakenOver", func(t *testing.T) {
		s := open(t)
		j := job(t, square(t, "expire.geojson", 1, 0), "")
		c, err := s.Claim(ctx, j, "a", time.Second)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result)
		time.Sleep(1500 * time.Millisecond)
		c, err = s.Claim(ctx, j, "b", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result)
		ok, err := s.Heartbeat(ctx, j.ID, "a", lease)
		require.NoError(t, err)
		require.False(t, ok, "a's lease was taken over")
	})
	t.Run("WriteGate", func(t *testing.T) {
		s := open(t)
		j := job(t, square(t, "write.geojson", 3, 0), "")
		res, err := write(t, s, j, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.Written, res.Outcome)
		require.EqualValues(t, 3, res.Features)
		require.Greater(t, res.AreaM2, 0.0)
		require.Empty(t, res.Replaced)
		cur, err := s.CurrentGeneration(ctx, j.Source.Bucket, j.Source.Key, "parcels", j.Params.PipelineVersion)
		require.NoError(t, err)
		require.Equal(t, j.ID, cur)

		c, err := s.Claim(ctx, j, "b", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimCommitted, c.Result, "a committed job's delivery is a duplicate")
		require.NoError(t, s.Fail(ctx, j.ID, "late"))
		c, err = s.Claim(ctx, j, "b", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimCommitted, c.Result, "a committed job is never marked failed")

		// The write gate alone stops a duplicate that passed the claim
		// gate (a stolen lease), and a different payload under the key.
		in, err := j.Fetch.Fetch(ctx, t.TempDir())
		require.NoError(t, err)
		r, err := geomio.Open(in.Path, geomio.Options{})
		require.NoError(t, err)
		res, err = s.Write(ctx, j, "b", r, in)
		r.Close()
		require.NoError(t, err)
		require.Equal(t, ingest.AlreadyPresent, res.Outcome)
		r, err = geomio.Open(in.Path, geomio.Options{})
		require.NoError(t, err)
		in.ContentHash = sha([]byte("other bytes"))
		_, err = s.Write(ctx, j, "b", r, in)
		r.Close()
		require.Error(t, err)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), "a payload mismatch: %v", err)

		snap, err := s.Snapshot(ctx, j.ID)
		require.NoError(t, err)
		require.Empty(t, snap.Inconsistencies())
		_, err = s.Snapshot(ctx, "0000000000000000000000000000000000000000000000000000000000000000")
		require.True(t, errors.Is(err, ingest.ErrJobNotFound), "%v", err)
	})
	t.Run("AParseErrorCommitsNothing", func(t *testing.T) {
		s := open(t)
		p := filepath.Join(t.TempDir(), "broken.geojson")
		require.NoError(t, os.WriteFile(p, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[1,1],[2,1],[2,2],[1,1]]]}},{"type":"Feat`), 0o644))
		j := job(t, p, "")
		_, err := write(t, s, j, "a")
		require.Error(t, err)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%v", err)
		cur, err := s.CurrentGeneration(ctx, j.Source.Bucket, j.Source.Key, "parcels", j.Params.PipelineVersion)
		require.NoError(t, err)
		require.Empty(t, cur)
		_, err = s.Snapshot(ctx, j.ID)
		require.True(t, errors.Is(err, ingest.ErrJobNotFound), "%v", err)
	})
	t.Run("VersionsReplaceAndSupersede", func(t *testing.T) {
		s := open(t)
		dir := t.TempDir()
		v := func(n int, order string) ingest.Job {
			p := filepath.Join(dir, fmt.Sprintf("v%d", n), "versions.geojson")
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.Rename(square(t, "versions.geojson", 2, n), p))
			return job(t, p, order)
		}
		v1 := v(1, ingest.OrderFromSequencer("10"))
		v2 := v(2, ingest.OrderFromSequencer("20"))
		v3 := v(3, ingest.OrderFromSequencer("30"))
		require.Equal(t, v1.Source.Key, v3.Source.Key)
		res, err := write(t, s, v2, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.Written, res.Outcome)
		res, err = write(t, s, v1, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.Superseded, res.Outcome, "a late older version")
		require.Zero(t, res.Features)
		res, err = write(t, s, v3, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.Written, res.Outcome)
		require.Equal(t, v2.ID, res.Replaced)
		cur, err := s.CurrentGeneration(ctx, v3.Source.Bucket, v3.Source.Key, "parcels", v3.Params.PipelineVersion)
		require.NoError(t, err)
		require.Equal(t, v3.ID, cur)

		// A removal older than the current version changes nothing; a
		// newer one retires it.
		del := func(order string) ingest.Job {
			src := v3.Source
			src.VersionToken, src.Order = "delete:"+order, order
			j, err := ingest.NewDeleteJob(src, ingest.DefaultParams("parcels"))
			require.NoError(t, err)
			c, err := s.Claim(ctx, j, "a", lease)
			require.NoError(t, err)
			require.Equal(t, ingest.ClaimWon, c.Result)
			return j
		}
		old := del(ingest.OrderFromSequencer("25"))
		res, err = s.Retire(ctx, old, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.Superseded, res.Outcome)
		newer := del(ingest.OrderFromSequencer("40"))
		res, err = s.Retire(ctx, newer, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.Retired, res.Outcome)
		require.Equal(t, v3.ID, res.Replaced)
		res, err = s.Retire(ctx, newer, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.AlreadyPresent, res.Outcome)
		cur, err = s.CurrentGeneration(ctx, v3.Source.Bucket, v3.Source.Key, "parcels", v3.Params.PipelineVersion)
		require.NoError(t, err)
		require.Empty(t, cur)
	})
	t.Run("RecordSuperseded", func(t *testing.T) {
		s := open(t)
		j := job(t, square(t, "gone.geojson", 1, 0), "")
		c, err := s.Claim(ctx, j, "a", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result)
		res, err := s.RecordSuperseded(ctx, j, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.Superseded, res.Outcome)
		c, err = s.Claim(ctx, j, "b", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimCommitted, c.Result)
		res, err = s.RecordSuperseded(ctx, j, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.AlreadyPresent, res.Outcome)
	})
	t.Run("ClaimBatch", func(t *testing.T) {
		s := open(t)
		done := job(t, square(t, "done.geojson", 1, 0), "")
		_, err := write(t, s, done, "a")
		require.NoError(t, err)
		held := job(t, square(t, "held.geojson", 1, 0), "")
		c, err := s.Claim(ctx, held, "other", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result)
		fresh := job(t, square(t, "fresh.geojson", 1, 0), "")
		got, err := s.ClaimBatch(ctx, []ingest.Job{done, held, fresh, fresh}, "a", lease)
		require.NoError(t, err)
		require.Equal(t, []ingest.ClaimResult{ingest.ClaimCommitted, ingest.ClaimHeld, ingest.ClaimWon, ingest.ClaimHeld}, got)
		got, err = s.ClaimBatch(ctx, nil, "a", lease)
		require.NoError(t, err)
		require.Empty(t, got)
	})
	t.Run("ConcurrentDeliveriesWriteOnce", func(t *testing.T) {
		s := open(t)
		j := job(t, square(t, "race.geojson", 5, 0), "")
		c, err := s.Claim(ctx, j, "w0", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result)
		var wg sync.WaitGroup
		results := make([]ingest.Outcome, StoreWriters)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Every delivery but w0's writes without holding the
				// claim (as after stolen leases): the write gate alone
				// must keep the job exactly once.
				in, err := j.Fetch.Fetch(ctx, t.TempDir())
				if err != nil {
					t.Error(err)
					return
				}
				r, err := geomio.Open(in.Path, geomio.Options{})
				if err != nil {
					t.Error(err)
					return
				}
				defer r.Close()
				res, err := s.Write(ctx, j, fmt.Sprint("w", i), r, in)
				if err != nil {
					t.Error(err)
					return
				}
				results[i] = res.Outcome
			}()
		}
		wg.Wait()
		written := 0
		for _, o := range results {
			if o == ingest.Written {
				written++
			} else {
				require.Equal(t, ingest.AlreadyPresent, o)
			}
		}
		require.Equal(t, 1, written)
		snap, err := s.Snapshot(ctx, j.ID)
		require.NoError(t, err)
		require.Empty(t, snap.Inconsistencies())
	})
	t.Run("RegisterCRSAndReports", func(t *testing.T) {
		s := open(t)
		srid, err := s.RegisterCRS(crs.CRS{EPSG: 4326})
		require.NoError(t, err)
		require.Equal(t, 4326, srid)
		_, err = s.RefreshReports(ctx)
		require.NoError(t, err)
		r, err := s.RefreshReports(ctx)
		require.NoError(t, err)
		require.Zero(t, r.Assigned, "idempotent")
		_, err = s.RefreshParcelJob(ctx, "", "")
		require.NoError(t, err)
	})
}
