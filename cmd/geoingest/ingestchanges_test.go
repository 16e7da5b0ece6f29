package main

import (
	"encoding/json"
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

// TestIngestLineTellsDuplicateKeys: a version whose key has duplicates
// (two -99 placeholders) says how many features it could not match by
// key, in the text line and in the JSON's changes; it said nothing, and
// only `changes --job` told.
func TestIngestLineTellsDuplicateKeys(t *testing.T) {
	c := &ingest.Changes{Base: "b", Counts: ingest.ChangeCounts{Attributes: 2, Unchanged: 1}, DuplicateKeys: 2}
	got := versionChanges(ingest.Result{Outcome: ingest.Written, Changes: c})
	require.EqualValues(t, 2, got.DuplicateKeys)
	require.Equal(t, "; 0 added, 0 removed, 0 geometry, 2 attributes, 1 unchanged; 2 features with a duplicate key (matched by content and overlap)",
		changesText(got))
	b, err := json.Marshal(got)
	require.NoError(t, err)
	require.Contains(t, string(b), `"duplicate_keys":2`)

	c.DuplicateKeys = 0
	b, err = json.Marshal(versionChanges(ingest.Result{Outcome: ingest.Written, Changes: c}))
	require.NoError(t, err)
	require.NotContains(t, string(b), "duplicate_keys", "none: left out, as before")
}
