package postgis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// parcelsFile writes n squares from x0 (degrees of longitude) with the
// properties props(i) gives, and returns its path.
func parcelsFile(t *testing.T, name string, n int, x0 float64, props func(i int) string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		x, y := x0+float64(i%50)*0.002, 52.5+float64(i/50)*0.002
		fmt.Fprintf(&b, `{"type":"Feature","properties":%s,"geometry":{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}}`,
			props(i), x, y, x+0.001, y, x+0.001, y+0.001, x, y+0.001, x, y)
	}
	b.WriteString("]}")
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

func apn(i int) string { return fmt.Sprintf(`{"APN":"%07d","use":"R1"}`, i) }

// current is what readers see: the current parcels and their source's
// current job.
func current(t *testing.T, pool *pgxpool.Pool) (n int64, job string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM parcels`).Scan(&n))
	require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(max(current_job_id), '') FROM sources`).Scan(&job))
	return n, job
}

func verifiedStore(t *testing.T, s *Store) *ingest.Verification {
	t.Helper()
	v, err := s.Verify(context.Background())
	require.NoError(t, err)
	require.Empty(t, v.Problems)
	return v
}

// TestTruncatedVersionIsHeldUntilApproved: a county of 200 parcels, then
// a version with its first 10 only (the seed's truncated export). The
// version is held as pending: written, invisible to readers, the current
// generation untouched; a duplicate delivery changes nothing; verify
// counts it; an approval makes it current once (a second approval and
// concurrent ones report the first), audited. With a diff write (the
// version held from its incoming table) and a full one (in the shared
// partition and in a partition of its own).
func TestTruncatedVersionIsHeldUntilApproved(t *testing.T) {
	t.Parallel()
	full := parcelsFile(t, "full.geojson", 200, 13, apn)
	truncated := parcelsFile(t, "truncated.geojson", 10, 13, apn)
	for _, mode := range []string{"diff", "full", "full-own"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.store.FullReplace = mode != "diff" // a diff write holds from its incoming table
			if mode == "full-own" {
				b.store.OwnPartitionBytes = 1
			}
			ctx := context.Background()
			v1 := version(t, full, "v1", "01", ingest.DefaultParams("parcels"))
			require.Equal(t, ingest.Written, b.svc.Run(ctx, v1).Outcome)
			v2 := version(t, truncated, "v2", "02", ingest.DefaultParams("parcels"))
			res := b.svc.Run(ctx, v2)
			require.NoError(t, res.Err)
			require.Equal(t, ingest.Pending, res.Outcome)
			require.Contains(t, res.Reason, "shrink: features down 95.0% (200 -> 10")
			n, cur := current(t, b.pool)
			require.EqualValues(t, 200, n, "readers still see the current generation")
			require.Equal(t, v1.ID, cur)

			// A duplicate delivery of the pending job: nothing twice.
			dup := b.svc.Run(ctx, version(t, truncated, "v2", "02", ingest.DefaultParams("parcels")))
			require.Equal(t, ingest.AlreadyPresent, dup.Outcome)
			ps, err := b.store.ListPending(ctx)
			require.NoError(t, err)
			require.Len(t, ps, 1)
			require.Equal(t, v2.ID, ps[0].JobID)
			require.EqualValues(t, 10, ps[0].Features)
			require.Equal(t, v1.ID, ps[0].Current)
			vr := verifiedStore(t, b.store)
			require.EqualValues(t, 1, vr.Pending)

			// Approve, four times at once: one approval, three reports of it.
			var wg sync.WaitGroup
			results := make([]ingest.DecisionResult, 4)
			errs := make([]error, 4)
			for i := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], errs[i] = b.svc.Decide(ctx, v2.ID, ingest.Decision{Approve: true, Actor: fmt.Sprintf("op%d", i), Reason: "the county sold 190 parcels to the state"})
				}()
			}
			wg.Wait()
			fresh := 0
			for i, r := range results {
				require.NoError(t, errs[i])
				require.Equal(t, "approved", r.Action)
				if !r.Already {
					fresh++
					require.Equal(t, v1.ID, r.Replaced)
				}
			}
			require.Equal(t, 1, fresh)
			n, cur = current(t, b.pool)
			require.EqualValues(t, 10, n)
			require.Equal(t, v2.ID, cur)
			verifiedStore(t, b.store)

			_, err = b.svc.Decide(ctx, v2.ID, ingest.Decision{Approve: false, Actor: "op", Reason: "too late"})
			require.Equal(t, ingest.Precondition, ingest.KindOf(err), "%v", err)
			evs, err := b.store.GuardEvents(ctx, v2.ID)
			require.NoError(t, err)
			require.Len(t, evs, 2)
			require.Equal(t, "held", evs[0].Action)
			require.Equal(t, "approved", evs[1].Action)
			require.Equal(t, "the county sold 190 parcels to the state", evs[1].Reason)
			// Every answer, the approval's own and the reports of it, says
			// when it was approved: the audit trail's time.
			require.False(t, evs[1].At.IsZero())
			for _, r := range results {
				require.True(t, evs[1].At.Equal(r.At), "answer at %v, audited at %v (already %v)", r.At, evs[1].At, r.Already)
			}
			ps, err = b.store.ListPending(ctx)
			require.NoError(t, err)
			require.Empty(t, ps)
			// The next version is compared with the approved one.
			v3 := version(t, full, "v3", "03", ingest.DefaultParams("parcels"))
			require.Equal(t, ingest.Written, b.svc.Run(ctx, v3).Outcome)
			n, _ = current(t, b.pool)
			require.EqualValues(t, 200, n)
			verifiedStore(t, b.store)
		})
	}
}

// TestGuardsHoldEachKind: an emptied (all but one), moved, drifted
// (renamed key, a code become a number) version is held; rejecting one
// drops it for good; --force applies it, audited.
func TestGuardsHoldEachKind(t *testing.T) {
	t.Parallel()
	full := parcelsFile(t, "full.geojson", 100, 13, apn)
	cases := map[string]struct {
		path  string
		guard string
	}{
		"emptied": {parcelsFile(t, "one.geojson", 1, 13, apn), "shrink"},
		"moved":   {parcelsFile(t, "moved.geojson", 100, 2.3, apn), "extent"},
		"renamed": {parcelsFile(t, "renamed.geojson", 100, 13, func(i int) string { return fmt.Sprintf(`{"PARCEL_ID":"%07d","use":"R1"}`, i) }), "drift: fields missing: APN"},
		"retyped": {parcelsFile(t, "retyped.geojson", 100, 13, func(i int) string { return fmt.Sprintf(`{"APN":%d,"use":"R1"}`, i) }), "drift: fields whose values changed type: APN (string -> number)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			v1 := version(t, full, "v1", "01", ingest.DefaultParams("parcels"))
			require.Equal(t, ingest.Written, b.svc.Run(ctx, v1).Outcome)
			v2 := version(t, c.path, "v2", "02", ingest.DefaultParams("parcels"))
			res := b.svc.Run(ctx, v2)
			require.Equal(t, ingest.Pending, res.Outcome, "%+v", res)
			require.Contains(t, res.Reason, c.guard)

			r, err := b.svc.Decide(ctx, v2.ID, ingest.Decision{Approve: false, Actor: "op", Reason: "wrong export"})
			require.NoError(t, err)
			require.Equal(t, "rejected", r.Action)
			r, err = b.svc.Decide(ctx, v2.ID, ingest.Decision{Approve: false, Actor: "op2", Reason: "again"})
			require.NoError(t, err)
			require.True(t, r.Already)
			require.Equal(t, "op", r.Actor)
			_, err = b.svc.Decide(ctx, v2.ID, ingest.Decision{Approve: true, Actor: "op", Reason: "changed my mind"})
			require.Equal(t, ingest.Precondition, ingest.KindOf(err))
			n, cur := current(t, b.pool)
			require.EqualValues(t, 100, n)
			require.Equal(t, v1.ID, cur)
			verifiedStore(t, b.store)

			// The same file forced in, as a new key (another version).
			v3 := version(t, c.path, "v3", "03", ingest.DefaultParams("parcels"))
			v3.Guards = ingest.Guards{Force: true, Reason: "the county redrew itself"}
			res = b.svc.Run(ctx, v3)
			require.Equal(t, ingest.Written, res.Outcome)
			require.Contains(t, res.Reason, "forced (the county redrew itself)")
			_, cur = current(t, b.pool)
			require.Equal(t, v3.ID, cur)
			evs, err := b.store.GuardEvents(ctx, v3.ID)
			require.NoError(t, err)
			require.Len(t, evs, 1)
			require.Equal(t, "forced", evs[0].Action)
			verifiedStore(t, b.store)
		})
	}
}

// TestPendingNeverBlocksItsSource: a source keeps at most its newest
// pending version. A newer version that passes the guards is applied and
// supersedes the pending one; a newer one that trips them replaces it as
// the pending version; an older one that arrives late is superseded as
// always if it is held, applied if it passes (the pending newer one stays
// pending, and replaces it if approved); an approval after a newer delete
// supersedes the version.
func TestPendingNeverBlocksItsSource(t *testing.T) {
	t.Parallel()
	full := parcelsFile(t, "full.geojson", 100, 13, apn)
	fuller := parcelsFile(t, "fuller.geojson", 110, 13, apn)
	small := parcelsFile(t, "small.geojson", 10, 13, apn)
	smaller := parcelsFile(t, "smaller.geojson", 5, 13, apn)
	ctx := context.Background()
	decided := func(t *testing.T, b *bundle, id, action string) {
		t.Helper()
		r, err := b.svc.Decide(ctx, id, ingest.Decision{Approve: true, Actor: "op", Reason: "late approval"})
		require.NoError(t, err)
		require.Equal(t, action, r.Action)
	}
	t.Run("newer passes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, ingest.Written, b.svc.Run(ctx, version(t, full, "v1", "01", ingest.DefaultParams("parcels"))).Outcome)
		v2 := version(t, small, "v2", "02", ingest.DefaultParams("parcels"))
		require.Equal(t, ingest.Pending, b.svc.Run(ctx, v2).Outcome)
		v3 := version(t, fuller, "v3", "03", ingest.DefaultParams("parcels"))
		require.Equal(t, ingest.Written, b.svc.Run(ctx, v3).Outcome)
		ps, err := b.store.ListPending(ctx)
		require.NoError(t, err)
		require.Empty(t, ps)
		decided(t, b, v2.ID, "superseded")
		n, cur := current(t, b.pool)
		require.EqualValues(t, 110, n)
		require.Equal(t, v3.ID, cur)
		verifiedStore(t, b.store)
	})
	t.Run("newer held too", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, ingest.Written, b.svc.Run(ctx, version(t, full, "v1", "10", ingest.DefaultParams("parcels"))).Outcome)
		v2 := version(t, small, "v2", "20", ingest.DefaultParams("parcels"))
		require.Equal(t, ingest.Pending, b.svc.Run(ctx, v2).Outcome)
		v3 := version(t, smaller, "v3", "30", ingest.DefaultParams("parcels"))
		require.Equal(t, ingest.Pending, b.svc.Run(ctx, v3).Outcome)
		ps, err := b.store.ListPending(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.Equal(t, v3.ID, ps[0].JobID)
		// A late v2.5 that is held too is older than the pending v3.
		v25 := version(t, smaller, "v2.5", "25", ingest.DefaultParams("parcels"))
		require.Equal(t, ingest.Superseded, b.svc.Run(ctx, v25).Outcome)
		decided(t, b, v2.ID, "superseded")
		decided(t, b, v3.ID, "approved")
		n, cur := current(t, b.pool)
		require.EqualValues(t, 5, n)
		require.Equal(t, v3.ID, cur)
		verifiedStore(t, b.store)
	})
	t.Run("older passes late", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, ingest.Written, b.svc.Run(ctx, version(t, full, "v1", "01", ingest.DefaultParams("parcels"))).Outcome)
		v3 := version(t, small, "v3", "03", ingest.DefaultParams("parcels"))
		require.Equal(t, ingest.Pending, b.svc.Run(ctx, v3).Outcome)
		// v2, older than the pending v3 and newer than the current v1,
		// arrives late and passes the guards: it is applied, and the
		// pending v3 is unaffected.
		v2 := version(t, fuller, "v2", "02", ingest.DefaultParams("parcels"))
		require.Equal(t, ingest.Written, b.svc.Run(ctx, v2).Outcome)
		ps, err := b.store.ListPending(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.Equal(t, v3.ID, ps[0].JobID)
		n, cur := current(t, b.pool)
		require.EqualValues(t, 110, n)
		require.Equal(t, v2.ID, cur)
		verifiedStore(t, b.store)
		// v3 is the newest version: approved, it replaces v2.
		decided(t, b, v3.ID, "approved")
		n, cur = current(t, b.pool)
		require.EqualValues(t, 10, n)
		require.Equal(t, v3.ID, cur)
		verifiedStore(t, b.store)
	})
	t.Run("delete after", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Equal(t, ingest.Written, b.svc.Run(ctx, version(t, full, "v1", "01", ingest.DefaultParams("parcels"))).Outcome)
		v2 := version(t, small, "v2", "02", ingest.DefaultParams("parcels"))
		require.Equal(t, ingest.Pending, b.svc.Run(ctx, v2).Outcome)
		require.Equal(t, ingest.Retired, b.svc.Run(ctx, deleteVersion(t, "d3", "03")).Outcome)
		decided(t, b, v2.ID, "superseded")
		n, _ := current(t, b.pool)
		require.Zero(t, n)
		verifiedStore(t, b.store)
	})
}

// TestPendingSurvivesARestart: a pending version is committed state: a
// worker (and its pool) gone between the hold and the approval changes
// nothing, and an approval cut before its commit leaves it pending.
func TestPendingSurvivesARestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.Equal(t, ingest.Written, b.svc.Run(ctx, version(t, parcelsFile(t, "full.geojson", 100, 13, apn), "v1", "01", ingest.DefaultParams("parcels"))).Outcome)
	v2 := version(t, parcelsFile(t, "small.geojson", 10, 13, apn), "v2", "02", ingest.DefaultParams("parcels"))
	require.Equal(t, ingest.Pending, b.svc.Run(ctx, v2).Outcome)
	b.pool.Close()

	fresh, err := pgxpool.New(ctx, b.pool.Config().ConnString())
	require.NoError(t, err)
	defer fresh.Close()
	svc := newTestService(fresh, b.metrics, nil)
	// An approval whose context ends mid-way commits nothing.
	cut, cancel := context.WithCancel(ctx)
	cancel()
	_, err = svc.Decide(cut, v2.ID, ingest.Decision{Approve: true, Actor: "op", Reason: "ok"})
	require.Error(t, err)
	ps, err := svc.Store.(*Store).ListPending(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	r, err := svc.Decide(ctx, v2.ID, ingest.Decision{Approve: true, Actor: "op", Reason: "ok"})
	require.NoError(t, err)
	require.Equal(t, "approved", r.Action)
	require.False(t, r.Already)
	n, cur := current(t, fresh)
	require.EqualValues(t, 10, n)
	require.Equal(t, v2.ID, cur)
	verifiedStore(t, svc.Store.(*Store))
}

// unguarded is job with its guards off: for the tests of other things
// that replace a version with a smaller one on purpose.
func unguarded(job ingest.Job) ingest.Job {
	job.Guards.Off = true
	return job
}

// TestEmptiedVersionIsHeldUntilApproved: a version of no features at all
// (an export that wrote none) of a source with a current generation is
// what the guards are for: held as pending, the current generation
// untouched, then approved (the source has no features, once) or applied
// by --force. It was refused as a failed job, which no approval could
// apply. A source's first version of nothing, and one under guards
// turned off, are still refused. In a diff write, a full one, and a full
// one in a partition of its own.
func TestEmptiedVersionIsHeldUntilApproved(t *testing.T) {
	t.Parallel()
	full := parcelsFile(t, "full.geojson", 100, 13, apn)
	empty := parcelsFile(t, "empty.geojson", 0, 13, apn)
	for _, mode := range []string{"diff", "full", "full-own"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.store.FullReplace = mode != "diff"
			if mode == "full-own" {
				b.store.OwnPartitionBytes = 1
			}
			ctx := context.Background()
			first := b.svc.Run(ctx, version(t, empty, "v0", "00", ingest.DefaultParams("parcels")))
			require.Equal(t, ingest.Failed, first.Outcome, "a first version of nothing")
			require.ErrorContains(t, first.Err, "the file has no features")

			v1 := version(t, full, "v1", "01", ingest.DefaultParams("parcels"))
			require.Equal(t, ingest.Written, b.svc.Run(ctx, v1).Outcome)
			off := version(t, empty, "off", "015", ingest.DefaultParams("parcels"))
			off.Guards = ingest.Guards{Off: true}
			res := b.svc.Run(ctx, off)
			require.Equal(t, ingest.Failed, res.Outcome, "guards off: refused")

			v2 := version(t, empty, "v2", "02", ingest.DefaultParams("parcels"))
			res = b.svc.Run(ctx, v2)
			require.NoError(t, res.Err)
			require.Equal(t, ingest.Pending, res.Outcome, "%+v", res)
			require.Contains(t, res.Reason, "shrink: features down 100.0% (100 -> 0")
			n, cur := current(t, b.pool)
			require.EqualValues(t, 100, n)
			require.Equal(t, v1.ID, cur)
			ps, err := b.store.ListPending(ctx)
			require.NoError(t, err)
			require.Len(t, ps, 1)
			require.Zero(t, ps[0].Features)
			verifiedStore(t, b.store)

			r, err := b.svc.Decide(ctx, v2.ID, ingest.Decision{Approve: true, Actor: "op", Reason: "the county handed its parcels to the state"})
			require.NoError(t, err)
			require.Equal(t, "approved", r.Action)
			n, cur = current(t, b.pool)
			require.Zero(t, n)
			require.Equal(t, v2.ID, cur)
			verifiedStore(t, b.store)

			// The next version lands whole on the empty generation.
			v3 := version(t, full, "v3", "03", ingest.DefaultParams("parcels"))
			res = b.svc.Run(ctx, v3)
			require.Equal(t, ingest.Written, res.Outcome, "%+v", res)
			n, cur = current(t, b.pool)
			require.EqualValues(t, 100, n)
			require.Equal(t, v3.ID, cur)
			verifiedStore(t, b.store)

			// Forced: applied at once, audited.
			v4 := version(t, empty, "v4", "04", ingest.DefaultParams("parcels"))
			v4.Guards = ingest.Guards{Force: true, Reason: "retired"}
			res = b.svc.Run(ctx, v4)
			require.Equal(t, ingest.Written, res.Outcome, "%+v", res)
			require.Contains(t, res.Reason, "forced (retired)")
			n, cur = current(t, b.pool)
			require.Zero(t, n)
			require.Equal(t, v4.ID, cur)
			verifiedStore(t, b.store)
		})
	}
}
