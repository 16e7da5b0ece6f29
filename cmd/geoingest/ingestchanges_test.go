package main

import (
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestIngestLineTellsAVersionsChanges: the text line of a written new
// version ends with its counts; a first version, a duplicate and a
// pending version have none.
func TestIngestLineTellsAVersionsChanges(t *testing.T) {
	c := &ingest.Changes{Base: "b", Counts: ingest.ChangeCounts{Added: 2, Removed: 5, Geometry: 3, Attributes: 10, Unchanged: 4223}}
	got := versionChanges(ingest.Result{Outcome: ingest.Written, Changes: c})
	require.Equal(t, &ingestChanges{Base: "b", Counts: c.Counts}, got)
	require.Equal(t, "; 2 added, 5 removed, 3 geometry, 10 attributes, 4223 unchanged", changesText(got))

	first := &ingest.Changes{Counts: ingest.ChangeCounts{Added: 4241}}
	for _, r := range []ingest.Result{
		{Outcome: ingest.Written, Changes: first},
		{Outcome: ingest.Written},
		{Outcome: ingest.AlreadyPresent, Changes: c},
		{Outcome: ingest.Pending, Changes: c},
	} {
		require.Nil(t, versionChanges(r), "%+v", r)
		require.Empty(t, changesText(versionChanges(r)))
	}
}
