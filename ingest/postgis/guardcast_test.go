package postgis

import (
	"context"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestQuarantineGuardCountsCastFailures: a version whose features do not
// cast under its mapping (rule cast) has them left out as the geometry
// policies' are, so the quarantine guard judges them too
// (docs/schema.md: "the rest of the file lands, unless the quarantine
// guard holds the version"). The guard's count read only the null and
// wrong-type skips, so a version with 2 of 10 features quarantined for
// cast alone was written, not held.
func TestQuarantineGuardCountsCastFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sc, p := typedTestParams(t)
	_, err := b.store.ApplySchema(ctx, sc)
	require.NoError(t, err)
	v1 := writeFeats(t, "v1.geojson", typedFeats(func(int) string { return "" }))
	r := b.svc.Run(ctx, version(t, v1, "v1", "10", p))
	require.NoError(t, r.Err)
	require.Equal(t, ingest.Written, r.Outcome)

	// OWNER 1.5 does not cast to int8; the count and area shrink guards are
	// off, so that only the quarantine guard can hold it.
	fs := typedFeats(func(int) string { return "" })
	for _, i := range []int{7, 8} {
		fs[i].Props = strings.Replace(fs[i].Props, `"OWNER":`+typedValues[i].owner+`,`, `"OWNER":1.5,`, 1)
		require.Contains(t, fs[i].Props, `"OWNER":1.5,`)
	}
	job := version(t, writeFeats(t, "v2.geojson", fs), "v2", "20", p)
	job.Guards.Shrink = -1
	r = b.svc.Run(ctx, job)
	require.NoError(t, r.Err)
	require.EqualValues(t, 2, r.Quarantined)
	require.Equal(t, ingest.Pending, r.Outcome, r.Reason)
	require.Contains(t, r.Reason, "quarantine: 2 of 10 features (20.0%) left out (cast 2)")

	// The job's page (and `geoingest jobs show`) counts them.
	rec, err := NewConsole(b.pool).ConsoleJob(ctx, job.ID)
	require.NoError(t, err)
	require.NotNil(t, rec.Ledger)
	require.EqualValues(t, 2, rec.Ledger.SkippedCast)
}

// TestNothingCastsSaysSo: a version none of whose features casts under
// its mapping fails (nothing to write), and the error counts the cast
// failures: it listed only "0 null or empty, 0 not polygonal (points or
// lines), 0 with no area left after repair", and the quarantine that
// would say why is rolled back with the job. It names the first feature
// that does not cast, with its field and value: the count alone ("10 ...
// (quarantine rule cast)") sent the operator to a quarantine that the
// failed job left empty (quarantine list: no such job).
func TestNothingCastsSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sc, p := typedTestParams(t)
	_, err := b.store.ApplySchema(ctx, sc)
	require.NoError(t, err)
	fs := typedFeats(func(int) string { return "" })
	for i := range fs {
		fs[i].Props = strings.Replace(fs[i].Props, `"OWNER":`+typedValues[i].owner+`,`, `"OWNER":1.5,`, 1)
	}
	r := b.svc.Run(ctx, version(t, writeFeats(t, "v1.geojson", fs), "v1", "10", p))
	require.Error(t, r.Err)
	require.Contains(t, r.Err.Error(), "no polygonal features to write for parcels: 0 null or empty, 0 not polygonal (points or lines), 0 with no area left after repair, 10 with a value that does not cast under the mapping (the first: layer ")
	require.Contains(t, r.Err.Error(), " feature 0: field OWNER value 1.5 does not cast to owner_id int8")
}
