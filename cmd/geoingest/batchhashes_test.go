package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestBatchRewritesMatchHashes: the batch commands run the maintainer's
// match hashes' upgrade after their jobs, over the generations they
// wrote and no others. Two sources are loaded and their rows given
// MD5 match hashes, as stored before schema version 44. A new version
// of source a (one feature changed: the diff keeps the 29 others in
// place, with their old hashes) through `ingest --no-rehash` leaves them;
// the next version through `ingest` rewrites its generation's and says
// so on stderr, and leaves source b's; `backfill` of b's next version
// rewrites b's. A fresh load of a file the server reprojects, whose
// hashes are never stored, is not walked: that rewrite is serve's.
// Verify is clean.
func TestBatchRewritesMatchHashes(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_HOME": t.TempDir()}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.geojson"), filepath.Join(dir, "b.geojson")
	writeSquareSource(t, a, 0, 30)
	writeSquareSource(t, b, 1, 30)
	code, out, errOut := run(t, env, "ingest", a, b)
	require.Equal(t, 0, code, out+errOut)
	execSQL(t, db, `UPDATE geoingest_store.parcels SET geom_hash = md5(ST_AsEWKB(geom))::uuid, props_hash = md5(properties::text)::uuid`)
	stale := func(path string) int64 {
		return queryInt(t, db, `SELECT count(*) FROM geoingest_store.parcels o JOIN jobs j ON j.job_ref = o.job_ref
			JOIN sources s ON s.current_job_id = j.job_id
			WHERE s.source_key LIKE '%' || $1 AND (o.geom_hash >= geoingest_hash_form_end() OR o.props_hash >= geoingest_hash_form_end())`, path)
	}
	require.EqualValues(t, 30, stale("a.geojson"))
	require.EqualValues(t, 30, stale("b.geojson"))

	// One feature changed: a new version of a.
	next := func(path string, x int, v string) {
		writeSquareSource(t, path, x, 30)
		body, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(body), `{"i":0}`, `{"i":0,"v":"`+v+`"}`, 1)), 0o644))
	}
	next(a, 0, "2")
	code, out, errOut = run(t, env, "ingest", "--no-rehash", a)
	require.Equal(t, 0, code, out+errOut)
	require.NotContains(t, errOut, "match hashes")
	require.EqualValues(t, 29, stale("a.geojson"), "--no-rehash: the unchanged rows keep their old hashes")

	next(a, 0, "3")
	code, out, errOut = run(t, env, "ingest", a)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, errOut, "geoingest ingest: match hashes: 1 of 1 generations walked, 29 rows rewritten")
	require.Zero(t, stale("a.geojson"), "the generation the batch wrote")
	require.EqualValues(t, 30, stale("b.geojson"), "a generation the batch did not write is serve's")

	next(b, 1, "2")
	code, out, errOut = run(t, env, "backfill", "--dir", dir)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, errOut, "geoingest backfill: match hashes: 1 of 1 generations walked, 29 rows rewritten")
	require.Zero(t, stale("b.geojson"))
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM geoingest_store.parcels
		WHERE geom_hash <> geoingest_geom_hash(geom) OR props_hash <> geoingest_props_hash(properties)`), "the server's own hashes")

	code, out, errOut = run(t, env, "ingest", bristolMSOA)
	require.Equal(t, 0, code, out+errOut)
	require.NotContains(t, errOut, "match hashes")
	require.EqualValues(t, 72, queryInt(t, db, `SELECT count(*) FROM geoingest_store.parcels WHERE geom_hash IS NULL`),
		"a reprojected load's hashes, never stored, are left to serve")
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
}
