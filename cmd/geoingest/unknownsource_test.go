package main

import (
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestChangesAndHistoryOfAnUnknownSource: `changes SOURCE` and `history
// SOURCE` about a source no job ever named (a mistyped path) fail,
// naming it, where they printed an empty answer with exit 0; a known
// source with nothing in the window still answers empty, exit 0. A local
// path names its source as ingest named it.
func TestChangesAndHistoryOfAnUnknownSource(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_HOME": t.TempDir()}
	path := filepath.Join(t.TempDir(), "county.geojson")
	writeSquareSource(t, path, 0, 5)
	code, out, errOut := run(t, env, "ingest", path)
	require.Equal(t, 0, code, out+errOut)

	missing := "file://" + filepath.Join(filepath.Dir(path), "countyy.geojson")
	for _, args := range [][]string{{"changes", missing}, {"history", "--as-of", "1s", missing}} {
		code, out, errOut = run(t, env, args...)
		require.Equal(t, 1, code, "%v: %s", args, out+errOut)
		require.Contains(t, errOut, "no job was ever recorded for source "+missing, "%v", args)
	}

	known := "file://" + path
	code, out, errOut = run(t, env, "changes", "--since", "2999-01-01T00:00:00Z", known)
	require.Equal(t, 0, code, out+errOut)
	require.NotContains(t, errOut, "no job was ever recorded")
	code, out, errOut = run(t, env, "history", "--as-of", "2000-01-01T00:00:00Z", known)
	require.Equal(t, 0, code, out+errOut)
	require.NotContains(t, errOut, "no job was ever recorded")
	code, out, errOut = run(t, env, "changes", known)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "ADDED")

	// The path itself, as ingest took it, names the same source.
	code, out, errOut = run(t, env, "changes", path)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "ADDED")
	code, out, errOut = run(t, env, "history", "--as-of", "0s", path)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, known)
	typo := filepath.Join(filepath.Dir(path), "countyy.geojson")
	code, out, errOut = run(t, env, "changes", typo)
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "no job was ever recorded for source "+typo+" ("+missing+")")

	// A gs:// or azblob:// source is named as given, not as an s3:// one.
	for _, src := range []string{"gs://county-uploads/parcels.geojson", "azblob://uploads/parcels.geojson"} {
		for _, args := range [][]string{{"changes", src}, {"history", "--as-of", "1s", src}} {
			code, out, errOut = run(t, env, args...)
			require.Equal(t, 1, code, "%v: %s", args, out+errOut)
			require.Contains(t, errOut, "no job was ever recorded for source "+src+":", "%v", args)
			require.NotContains(t, errOut, "s3://", "%v", args)
		}
	}
}
