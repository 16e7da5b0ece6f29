package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

func TestCauseOf(t *testing.T) {
	wrapped := func(err error) error { // as Service.fail records it
		return &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("s3://b/k: %w", err)}
	}
	for _, tc := range []struct {
		err  error
		want ingest.Cause
	}{
		{ingest.PermanentCause(ingest.CauseWrongType, "feature 1: not polygonal"), ingest.CauseWrongType},
		{wrapped(ingest.PermanentCause(ingest.CauseNullGeometry, "feature 0: null")), ingest.CauseNullGeometry},
		{wrapped(&geomio.Error{File: "a.shp", Problem: "record 1", Code: geomio.CodeEncoding}), ingest.CauseEncoding},
		{wrapped(&crs.InputError{Msg: "PROJ cannot read the CRS"}), ingest.CauseCRS},
		{wrapped(fmt.Errorf("%w: no .dbf", ingest.ErrIncompleteShapefile)), ingest.CauseIncompleteSet},
		{wrapped(&geomio.Error{File: "a.geojson", Problem: "feature 2: invalid geometry"}), ""},
		{ingest.Permanentf("unknown CRS, in words only"), ""},
	} {
		require.Equal(t, tc.want, ingest.CauseOf(tc.err), "%v", tc.err)
	}
}

// TestCauseHint: each cause's hint names what to change, whatever the
// reason says; no cause is told to fix the file.
func TestCauseHint(t *testing.T) {
	for c, want := range map[ingest.Cause]string{
		ingest.CauseCRS: "source-srid", ingest.CauseInvalidGeometry: "invalid=repair", ingest.CauseNullGeometry: "null-geometry=skip",
		ingest.CauseWrongType: "wrong-type=skip", ingest.CauseIncompleteSet: "missing parts", ingest.CauseEncoding: "encoding=NAME",
		ingest.CausePayloadMismatch: "versioning", "": "Fix the file",
	} {
		require.Contains(t, ingest.CauseHint(c), want, c)
	}
}

// TestServiceRecordsTheCause: a job a policy refuses is recorded FAILED
// with the cause the refusal set; a file that does not parse with none.
func TestServiceRecordsTheCause(t *testing.T) {
	ctx := context.Background()
	svc, store := memService(t)
	dir := t.TempDir()
	nulls := filepath.Join(dir, "nulls.geojson")
	require.NoError(t, os.WriteFile(nulls, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":null}]}`), 0o644))
	job := fileJob(t, nulls)
	job.Params.NullGeometry = ingest.PolicyFail
	res := svc.Run(ctx, job)
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Equal(t, ingest.CauseNullGeometry, store.Cause(job.ID))

	broken := filepath.Join(dir, "broken.geojson")
	require.NoError(t, os.WriteFile(broken, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[1,1],[2`), 0o644))
	job = fileJob(t, broken)
	res = svc.Run(ctx, job)
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Empty(t, store.Cause(job.ID), "a file that does not parse has no cause but itself: %v", res.Err)
}
