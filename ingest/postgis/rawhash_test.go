package postgis

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/parcelchain"
	"github.com/stretchr/testify/require"
)

// TestRawHashIsCarriedOrCleared: a stored row's raw_hash (migration 0047)
// stands for the row's content, so every server path that copies a row
// unchanged carries it (a diff's kept rows, compaction) and every path
// that changes a row's content on the server clears it (the area
// measured, the geometry repaired). A raw hash left on a changed row would
// let a later version's identical bytes pass as unchanged.
func TestRawHashIsCarriedOrCleared(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	rawOf := func(where string, args ...any) map[string]*int64 {
		t.Helper()
		rows, err := b.pool.Query(ctx, `SELECT properties->>'APN', raw_hash FROM geoingest_store.parcels WHERE `+where, args...)
		require.NoError(t, err)
		out := map[string]*int64{}
		for rows.Next() {
			var k string
			var h *int64
			require.NoError(t, rows.Scan(&k, &h))
			out[k] = h
		}
		require.NoError(t, rows.Err())
		return out
	}

	// A diff: the kept rows keep theirs, the changed row is the new one.
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"APN"}
	c := newChain(11, 40)
	v1 := writeFeats(t, "v1.geojson", c.Parcels)
	require.NoError(t, b.svc.Run(ctx, version(t, v1, "v1", "01", p)).Err)
	_, err := b.pool.Exec(ctx, `UPDATE geoingest_store.parcels SET raw_hash = 1000 + feature_index`)
	require.NoError(t, err)
	fs := slices.Clone(c.Parcels)
	fs[3].Props = `{"APN":"P-4","use":"com","v":0}`
	res := b.svc.Run(ctx, version(t, writeFeats(t, "v2.geojson", fs), "v2", "02", p))
	require.NoError(t, res.Err)
	require.EqualValues(t, 1, res.Changes.Counts.Attributes)
	got := rawOf(`job_ref = (SELECT job_ref FROM jobs WHERE job_id = $1)`, res.JobID)
	require.Len(t, got, 40)
	for k, h := range got {
		require.NotNil(t, h, k)
		if k == "P-4" {
			require.False(t, *h >= 1000 && *h < 1100, "the changed row is the version's, with the raw hash its writer gave it")
			continue
		}
		require.True(t, *h >= 1000 && *h < 1100, "%s is kept: its raw hash too", k)
	}

	// Compaction folds an own partition into the shared one: carried.
	_, ids := ownSources(t, b, t.TempDir(), 1, 5)
	_, err = b.pool.Exec(ctx, `UPDATE geoingest_store.parcels SET raw_hash = 7 WHERE job_ref = (SELECT job_ref FROM jobs WHERE job_id = $1)`, ids[0])
	require.NoError(t, err)
	var moved int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT moved FROM geoingest_fold_job($1)`, ids[0]).Scan(&moved))
	require.EqualValues(t, 5, moved)
	var n, seven int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE raw_hash = 7) FROM geoingest_store.parcels
	                                         WHERE job_ref = (SELECT job_ref FROM jobs WHERE job_id = $1)`, ids[0]).Scan(&n, &seven))
	require.EqualValues(t, 5, n)
	require.EqualValues(t, 5, seven, "compaction copies the rows unchanged, their raw hashes too")

	// The server measures and repairs: cleared. A bow tie sent with a raw
	// hash and no area, and a valid square with both.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT geoingest_create_incoming('parcels')`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO pg_temp.geoingest_incoming (job_ref, feature_index, layer, properties, geom, area_m2, raw_hash) VALUES
	    (-1, 0, '', '{"APN":"bow"}', ST_Multi('SRID=4326;POLYGON((0 0,1 1,1 0,0 1,0 0))'::geometry), NULL, 5),
	    (-1, 1, '', '{"APN":"measured"}', ST_Multi('SRID=4326;POLYGON((0 0,1 0,1 1,0 1,0 0))'::geometry), NULL, 6),
	    (-1, 2, '', '{"APN":"ok"}', ST_Multi('SRID=4326;POLYGON((0 0,1 0,1 1,0 1,0 0))'::geometry), 1.5, 8)`)
	require.NoError(t, err)
	var repaired int64
	require.NoError(t, tx.QueryRow(ctx, `SELECT repaired FROM geoingest_finish_incoming(true, '{}', true, '')`).Scan(&repaired))
	require.EqualValues(t, 1, repaired)
	rows, err := tx.Query(ctx, `SELECT properties->>'APN', raw_hash FROM pg_temp.geoingest_incoming`)
	require.NoError(t, err)
	inc := map[string]*int64{}
	for rows.Next() {
		var k string
		var h *int64
		require.NoError(t, rows.Scan(&k, &h))
		inc[k] = h
	}
	require.NoError(t, rows.Err())
	require.Nil(t, inc["bow"], "repaired by the server")
	require.Nil(t, inc["measured"], "measured by the server")
	require.NotNil(t, inc["ok"])
	require.EqualValues(t, 8, *inc["ok"], "untouched")
}

// TestRawHashIsStored: a GeoJSON feature's row stores its salted raw hash
// (prepare/rawhash.go): the same bytes under the same options give the
// same hash in another source; a crs member (here at the collection's
// end, where crstail.go finds it) or another key gives another, though
// the bytes of every feature are the same; a row the server repairs has
// none.
func TestRawHashIsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	fs := []feat{sq(0, `{"APN":"A"}`), sq(1, `{"APN":"B"}`), sq(2, `{"APN":"C"}`), sq(3, `{"APN":"D"}`)}
	fs[3].Bow = true // invalid: repaired by the server
	plain := parcelchain.GeoJSON(fs)
	withCRS := append(bytes.TrimSuffix(slices.Clone(plain), []byte("}")),
		[]byte(`,"crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:OGC:1.3:CRS84"}}}`)...)
	load := func(bucket string, data []byte, key []string) map[string]*int64 {
		t.Helper()
		dir := t.TempDir()
		path := filepath.Join(dir, "x.geojson")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		p := ingest.DefaultParams("parcels")
		p.Key = key
		p.Invalid = ingest.PolicyRepair
		job, err := ingest.NewJob(ingest.Source{Bucket: bucket, Key: "parcels/x.geojson", VersionToken: "v1",
			Order: ingest.OrderFromSequencer("01")}, p, fileFetcher{path})
		require.NoError(t, err)
		res := b.svc.Run(ctx, job)
		require.NoError(t, res.Err)
		rows, err := b.pool.Query(ctx, `SELECT properties->>'APN', raw_hash FROM geoingest_store.parcels
		                                  WHERE job_ref = (SELECT job_ref FROM jobs WHERE job_id = $1)`, res.JobID)
		require.NoError(t, err)
		out := map[string]*int64{}
		for rows.Next() {
			var k string
			var h *int64
			require.NoError(t, rows.Scan(&k, &h))
			out[k] = h
		}
		require.NoError(t, rows.Err())
		require.Len(t, out, 4)
		return out
	}
	apn := []string{"APN"}
	one, two := load("b1", plain, apn), load("b2", plain, apn)
	crs, unkeyed := load("b3", withCRS, apn), load("b4", plain, nil)
	for _, k := range []string{"A", "B", "C"} {
		require.NotNil(t, one[k], k)
		require.Equal(t, *one[k], *two[k], "%s: the same bytes under the same options", k)
		require.NotNil(t, crs[k], k)
		require.NotEqual(t, *one[k], *crs[k], "%s: the same bytes under a crs member", k)
		require.NotNil(t, unkeyed[k], k)
		require.NotEqual(t, *one[k], *unkeyed[k], "%s: the same bytes under another key", k)
	}
	for _, m := range []map[string]*int64{one, two, crs, unkeyed} {
		require.Nil(t, m["D"], "repaired by the server: no raw hash")
	}
	require.NotEqual(t, *one["A"], *one["B"])
}

// TestShapefileRawHashIsStored: a shapefile's rows store their raw hashes,
// the same for the same set in another source (another directory), another when only the .prj
// differs (the same CRS in other words), or when there is none and the
// job gives the SRID: the CRS as the file gives it is in the salt.
func TestShapefileRawHashIsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	load := func(prj string, srid int) []*int64 {
		t.Helper()
		dir := t.TempDir()
		for _, ext := range []string{".shp", ".shx", ".dbf"} {
			data, err := os.ReadFile(filepath.Join(corpusDir, "six_counties", "six_counties"+ext))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "x"+ext), data, 0o644))
		}
		if prj != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "x.prj"), []byte(prj), 0o644))
		}
		p := ingest.DefaultParams("parcels")
		p.SourceSRID = srid
		res := b.svc.Run(ctx, localJob(t, filepath.Join(dir, "x.shp"), p))
		require.NoError(t, res.Err)
		rows, err := b.pool.Query(ctx, `SELECT raw_hash FROM geoingest_store.parcels
		                                  WHERE job_ref = (SELECT job_ref FROM jobs WHERE job_id = $1) ORDER BY feature_index`, res.JobID)
		require.NoError(t, err)
		var out []*int64
		for rows.Next() {
			var h *int64
			require.NoError(t, rows.Scan(&h))
			out = append(out, h)
		}
		require.NoError(t, rows.Err())
		require.NotEmpty(t, out)
		return out
	}
	esri, err := os.ReadFile(filepath.Join(corpusDir, "six_counties", "six_counties.prj"))
	require.NoError(t, err)
	epsg := `GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AUTHORITY["EPSG","4326"]]`
	one, two := load(string(esri), 0), load(string(esri), 0)
	other, none := load(epsg, 0), load("", 4326)
	require.Equal(t, len(one), len(other))
	valid := 0
	for i := range one {
		if one[i] == nil {
			continue // a row the server measured or repaired
		}
		valid++
		require.Equal(t, *one[i], *two[i], "feature %d: the same set", i)
		require.NotNil(t, other[i])
		require.NotEqual(t, *one[i], *other[i], "feature %d: another .prj", i)
		require.NotNil(t, none[i])
		require.NotEqual(t, *one[i], *none[i], "feature %d: no .prj", i)
	}
	require.Positive(t, valid)
}
