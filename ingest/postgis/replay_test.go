package postgis

import (
	"context"
	"os"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/stretchr/testify/require"
)

func TestReplayUnchangedJob(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	job := rpJob(t, rpBristolMSOA, "parcels")

	// Not in the ledger yet: Replay delivers it once, then again.
	rep, err := ingest.Replay(ctx, e.svc, e.store, job)
	require.NoError(t, err)
	require.Equal(t, ingest.Written, rep.First.Outcome)
	require.True(t, rep.Second.Outcome.Duplicate())
	require.True(t, rep.OK(), "changes: %v", rep.Changes)
	require.EqualValues(t, 72, rep.After.Features.N)
	require.NotEmpty(t, rep.After.Features.Checksum)

	// Rebuilt from the ledger, the job has the same key and replays clean.
	again, err := e.store.LedgerJob(ctx, job.ID, localfs.Files{})
	require.NoError(t, err)
	require.Equal(t, job.ID, again.ID)
	rep, err = ingest.Replay(ctx, e.svc, e.store, again)
	require.NoError(t, err)
	require.Empty(t, rep.First.Outcome)
	require.True(t, rep.OK(), "changes: %v", rep.Changes)
	require.Equal(t, rep.Before, rep.After)
}

func TestReplayFindsTamperedFeatures(t *testing.T) {
	t.Parallel()
	for name, tamper := range map[string]string{
		"row deleted":        `DELETE FROM parcels WHERE job_ref = geoingest_job_ref($1) AND feature_index = 3`,
		"geometry changed":   `UPDATE parcels SET geom = ST_Multi(ST_Buffer(geom, 0.0001)) WHERE job_ref = geoingest_job_ref($1) AND feature_index = 3`,
		"properties changed": `UPDATE parcels SET properties = properties || '{"edited": true}' WHERE job_ref = geoingest_job_ref($1) AND feature_index = 3`,
		"row inserted": `INSERT INTO parcels (job_ref, feature_index, geom)
			SELECT job_ref, 999, geom FROM parcels WHERE job_ref = geoingest_job_ref($1) AND feature_index = 0`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := rpSetup(t)
			ctx := context.Background()
			job := rpJob(t, rpBristolMSOA, "parcels")
			e.rpIngest(t, rpBristolMSOA, "parcels")
			e.exec(t, tamper, job.ID)
			rep, err := ingest.Replay(ctx, e.svc, e.store, job)
			require.NoError(t, err)
			require.False(t, rep.OK(), "tampering went unnoticed")
			t.Log(rep.Changes)
		})
	}
}

func TestSnapshotDiff(t *testing.T) {
	t.Parallel()
	a := ingest.Snapshot{JobID: "j", Status: "current", FeatureCount: 2, Features: ingest.FeatureSum{N: 2, Checksum: "x"}}
	b := a
	require.Empty(t, a.Diff(b))
	b.Features.Checksum = "y"
	b.Status = "replaced"
	require.Len(t, a.Diff(b), 2)
}

func TestLedgerJobRefusesChangedFile(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	ctx := context.Background()
	path := t.TempDir() + "/p.geojson"
	b, err := os.ReadFile(rpBristolMSOA)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	res := e.rpIngest(t, path, "parcels")
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	_, err = e.store.LedgerJob(ctx, res.JobID, localfs.Files{})
	require.Error(t, err)
	require.Equal(t, ingest.Permanent, ingest.KindOf(err))
	_, err = e.store.LedgerJob(ctx, "0000000000000000000000000000000000000000000000000000000000000000", localfs.Files{})
	require.ErrorIs(t, err, ingest.ErrJobNotFound)
}
