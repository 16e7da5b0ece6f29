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

// StoreWriters is how many writes the suites run at once.
const StoreWriters = 4

// lease is the suites' claim lease.
const lease = time.Minute

// StoreSuite is the conformance suite of ingest.Store: the suite of each
// of its roles. open returns a store on a fresh, empty, migrated
// database, able to run StoreWriters writes at once (a PostGIS pool of at
// least 2*StoreWriters+2 connections: a write may need a second
// connection while its transaction holds one); files is the FileSource
// whose jobs the suites write (local GeoJSON files they create). A role's
// suite needs the whole Store to set up what it checks (a ledger to read
// needs writes), but checks only its role's contract.
func StoreSuite(t *testing.T, open func(t *testing.T) ingest.Store, files ingest.FileSource) {
	gate := func(t *testing.T) GateStore { return open(t) }
	t.Run("Claims", func(t *testing.T) { ClaimsSuite(t, gate, files) })
	t.Run("WriteGate", func(t *testing.T) { WriteGateSuite(t, gate, files) })
	t.Run("CRSRegistry", func(t *testing.T) { CRSRegistrySuite(t, open, files) })
	t.Run("Reports", func(t *testing.T) { ReportsSuite(t, open, files) })
	t.Run("Ledger", func(t *testing.T) { LedgerSuite(t, open, files) })
}

// GateStore is what ClaimsSuite and WriteGateSuite need of a store: the
// pipeline's JobStore, and the ledger reads they check it by. Both
// postgis.Store and MemStore are one.
type GateStore interface {
	ingest.JobStore
	ingest.CurrentGenerations
	ingest.Snapshots
}

// storeKit is what the role suites share: how to open a store, and jobs
// of small GeoJSON files.
type storeKit struct {
	open  func(t *testing.T) ingest.Store
	files ingest.FileSource
}

// square writes a feature collection of n small squares; the version v
// changes the bytes.
func (k storeKit) square(t *testing.T, name string, n, v int) string {
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

// job is the job of the file at path, under the key conformance/NAME (one
// source for the versions of one name), with order when not "".
func (k storeKit) job(t *testing.T, path string, order string) ingest.Job {
	t.Helper()
	src, f, err := k.files.Source(path)
	require.NoError(t, err)
	src.Key = "conformance/" + filepath.Base(path)
	if order != "" {
		src.Order = order
	}
	j, err := ingest.NewJob(src, ingest.DefaultParams("parcels"), f)
	require.NoError(t, err)
	return j
}

// write runs job through both gates as owner.
func (k storeKit) write(t *testing.T, s ingest.JobStore, j ingest.Job, owner string) (ingest.WriteResult, error) {
	t.Helper()
	ctx := context.Background()
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
	return s.Write(ctx, j, owner, ingest.LogLayers(r), in)
}

// ClaimsSuite is the conformance suite of ingest.Claims (see StoreSuite).
func ClaimsSuite(t *testing.T, open func(t *testing.T) GateStore, files ingest.FileSource) {
	ctx := context.Background()
	k := storeKit{files: files}
	t.Run("ClaimGate", func(t *testing.T) {
		s := open(t)
		j := k.job(t, k.square(t, "claim.geojson", 1, 0), "")
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

		require.NoError(t, s.Fail(ctx, j.ID, "permanent", ""))
		c, err = s.Claim(ctx, j, "c", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result, "a FAILED claim is claimed again")
	})
	t.Run("AnExpiredLeaseIsTakenOver", func(t *testing.T) {
		s := open(t)
		j := k.job(t, k.square(t, "expire.geojson", 1, 0), "")
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
	t.Run("ClaimBatch", func(t *testing.T) {
		s := open(t)
		done := k.job(t, k.square(t, "done.geojson", 1, 0), "")
		_, err := k.write(t, s, done, "a")
		require.NoError(t, err)
		held := k.job(t, k.square(t, "held.geojson", 1, 0), "")
		c, err := s.Claim(ctx, held, "other", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, c.Result)
		fresh := k.job(t, k.square(t, "fresh.geojson", 1, 0), "")
		got, err := s.ClaimBatch(ctx, []ingest.Job{done, held, fresh, fresh}, "a", lease)
		require.NoError(t, err)
		require.Equal(t, []ingest.ClaimResult{ingest.ClaimCommitted, ingest.ClaimHeld, ingest.ClaimWon, ingest.ClaimHeld}, got)
		got, err = s.ClaimBatch(ctx, nil, "a", lease)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

// WriteGateSuite is the conformance suite of ingest.WriteGate (see StoreSuite).
func WriteGateSuite(t *testing.T, open func(t *testing.T) GateStore, files ingest.FileSource) {
	ctx := context.Background()
	k := storeKit{files: files}
	t.Run("WriteGate", func(t *testing.T) {
		s := open(t)
		j := k.job(t, k.square(t, "write.geojson", 3, 0), "")
		res, err := k.write(t, s, j, "a")
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
		require.NoError(t, s.Fail(ctx, j.ID, "late", ""))
		c, err = s.Claim(ctx, j, "b", lease)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimCommitted, c.Result, "a committed job is never marked failed")

		// The write gate alone stops a duplicate that passed the claim
		// gate (a stolen lease), and a different payload under the key.
		in, err := j.Fetch.Fetch(ctx, t.TempDir())
		require.NoError(t, err)
		r, err := geomio.Open(in.Path, geomio.Options{})
		require.NoError(t, err)
		res, err = s.Write(ctx, j, "b", ingest.LogLayers(r), in)
		r.Close()
		require.NoError(t, err)
		require.Equal(t, ingest.AlreadyPresent, res.Outcome)
		r, err = geomio.Open(in.Path, geomio.Options{})
		require.NoError(t, err)
		in.ContentHash = sha([]byte("other bytes"))
		_, err = s.Write(ctx, j, "b", ingest.LogLayers(r), in)
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
		j := k.job(t, p, "")
		_, err := k.write(t, s, j, "a")
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
			require.NoError(t, os.Rename(k.square(t, "versions.geojson", 2, n), p))
			return k.job(t, p, order)
		}
		v1 := v(1, ingest.OrderFromSequencer("10"))
		v2 := v(2, ingest.OrderFromSequencer("20"))
		v3 := v(3, ingest.OrderFromSequencer("30"))
		require.Equal(t, v1.Source.Key, v3.Source.Key)
		res, err := k.write(t, s, v2, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.Written, res.Outcome)
		res, err = k.write(t, s, v1, "a")
		require.NoError(t, err)
		require.Equal(t, ingest.Superseded, res.Outcome, "a late older version")
		require.Zero(t, res.Features)
		res, err = k.write(t, s, v3, "a")
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
		j := k.job(t, k.square(t, "gone.geojson", 1, 0), "")
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
	t.Run("ConcurrentDeliveriesWriteOnce", func(t *testing.T) {
		s := open(t)
		j := k.job(t, k.square(t, "race.geojson", 5, 0), "")
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
				res, err := s.Write(ctx, j, fmt.Sprint("w", i), ingest.LogLayers(r), in)
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
}

// CRSRegistrySuite is the conformance suite of ingest.CRSRegistry (see StoreSuite).
func CRSRegistrySuite(t *testing.T, open func(t *testing.T) ingest.Store, files ingest.FileSource) {
	ctx := context.Background()
	k := storeKit{open: open, files: files}
	t.Run("RegisterCRSAndKnownSRID", func(t *testing.T) {
		s := k.open(t)
		srid, err := s.RegisterCRS(crs.CRS{EPSG: 4326})
		require.NoError(t, err)
		require.Equal(t, 4326, srid)
		known, err := s.KnownSRID(ctx, 4326)
		require.NoError(t, err)
		require.True(t, known)
		known, err = s.KnownSRID(ctx, 1)
		require.NoError(t, err)
		require.False(t, known, "no CRS has SRID 1")
	})
	t.Run("JobCRS", func(t *testing.T) {
		s := k.open(t)
		j := k.job(t, k.square(t, "crs.geojson", 2, 0), "")
		_, err := k.write(t, s, j, "a")
		require.NoError(t, err)
		layers, err := s.JobCRS(ctx, j.ID)
		require.NoError(t, err)
		require.Len(t, layers, 1, "one layer read")
		require.Equal(t, 4326, layers[0].SRID)
		none, err := s.JobCRS(ctx, "0000000000000000000000000000000000000000000000000000000000000000")
		require.NoError(t, err)
		require.Empty(t, none)
	})
}

// ReportsSuite is the conformance suite of ingest.Reports (see StoreSuite).
func ReportsSuite(t *testing.T, open func(t *testing.T) ingest.Store, files ingest.FileSource) {
	ctx := context.Background()
	k := storeKit{open: open, files: files}
	t.Run("Refresh", func(t *testing.T) {
		s := k.open(t)
		_, err := s.RefreshReports(ctx)
		require.NoError(t, err)
		r, err := s.RefreshReports(ctx)
		require.NoError(t, err)
		require.Zero(t, r.Assigned, "idempotent")
		_, err = s.RefreshParcelJob(ctx, "", "")
		require.NoError(t, err)
	})
	t.Run("AreaReportAndCheck", func(t *testing.T) {
		s := k.open(t)
		j := k.job(t, k.square(t, "report.geojson", 3, 0), "")
		res, err := k.write(t, s, j, "a")
		require.NoError(t, err)
		r, err := s.AreaReport(ctx, ingest.AreaQuery{Method: ingest.MethodPointOnSurface, PipelineVersion: j.Params.PipelineVersion})
		require.NoError(t, err)
		require.EqualValues(t, 3, r.Total.Parcels, "every current parcel")
		require.InEpsilon(t, res.AreaM2, r.Total.AreaM2, 1e-9)
		require.EqualValues(t, 3, r.Unassigned.Parcels, "no admin layer: in no unit")
		_, err = s.AreaReport(ctx, ingest.AreaQuery{Method: "no-such-method"})
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%v", err)
		c, err := s.CheckAdmin(ctx, "", j.Params.PipelineVersion)
		require.NoError(t, err)
		require.NotNil(t, c)
		_, err = s.CheckAdmin(ctx, "bad key; drop", "")
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%v", err)
	})
}

// LedgerSuite is the conformance suite of ingest.Ledger (see StoreSuite):
// CurrentGeneration and Snapshot are checked with the write gate's suite.
func LedgerSuite(t *testing.T, open func(t *testing.T) ingest.Store, files ingest.FileSource) {
	ctx := context.Background()
	k := storeKit{open: open, files: files}
	t.Run("Reads", func(t *testing.T) {
		s := k.open(t)
		j := k.job(t, k.square(t, "ledger.geojson", 3, 0), "")
		res, err := k.write(t, s, j, "a")
		require.NoError(t, err)
		const unknown = "0000000000000000000000000000000000000000000000000000000000000000"

		d, err := s.ConsoleJob(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, j.ID, d.Job.JobID)
		require.Equal(t, "COMMITTED", d.Job.ClaimState)
		require.EqualValues(t, 3, d.Job.Features)
		_, err = s.ConsoleJob(ctx, unknown)
		require.True(t, errors.Is(err, ingest.ErrNoSuchJob), "%v", err)

		js, err := s.ConsoleJobs(ctx, ingest.JobQuery{Limit: 10})
		require.NoError(t, err)
		require.Len(t, js.Jobs, 1)
		require.Equal(t, j.ID, js.Jobs[0].JobID)
		for _, state := range []string{"COMMITTED", ingest.StateCommitted, "current"} {
			js, err = s.ConsoleJobs(ctx, ingest.JobQuery{State: state})
			require.NoError(t, err)
			require.Len(t, js.Jobs, 1, state)
		}
		for _, state := range []string{"CLAIMED", "FAILED", ingest.StateInFlight} {
			js, err = s.ConsoleJobs(ctx, ingest.JobQuery{State: state})
			require.NoError(t, err)
			require.Empty(t, js.Jobs, state)
		}
		_, err = s.ConsoleJobs(ctx, ingest.JobQuery{State: "bogus"})
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%v", err)

		ss, err := s.ConsoleSources(ctx, ingest.SourceQuery{Limit: 10})
		require.NoError(t, err)
		require.Len(t, ss.Sources, 1)
		require.Equal(t, j.ID, ss.Sources[0].CurrentJob)
		require.EqualValues(t, 3, ss.Sources[0].Features)

		sum, err := s.Summary(ctx)
		require.NoError(t, err)
		var parcels *ingest.TableSummary
		for i := range sum {
			if sum[i].Target == "parcels" {
				parcels = &sum[i]
			}
		}
		require.NotNil(t, parcels, "%v", sum)
		require.EqualValues(t, 3, parcels.Features)
		require.EqualValues(t, 1, parcels.Jobs)
		require.InEpsilon(t, res.AreaM2, parcels.AreaM2, 1e-9)

		v, err := s.Verify(ctx)
		require.NoError(t, err)
		require.True(t, v.OK(), "%v", v.Problems)
	})
	t.Run("LedgerJob", func(t *testing.T) {
		s := k.open(t)
		src, f, err := files.Source(k.square(t, "again.geojson", 1, 0)) // keyed by its own path
		require.NoError(t, err)
		j, err := ingest.NewJob(src, ingest.DefaultParams("parcels"), f)
		require.NoError(t, err)
		_, err = k.write(t, s, j, "a")
		require.NoError(t, err)
		again, err := s.LedgerJob(ctx, j.ID, files)
		require.NoError(t, err)
		require.Equal(t, j.ID, again.ID, "rebuilt with the same key")
		_, err = s.LedgerJob(ctx, "0000000000000000000000000000000000000000000000000000000000000000", files)
		require.True(t, errors.Is(err, ingest.ErrJobNotFound), "%v", err)
	})
}
