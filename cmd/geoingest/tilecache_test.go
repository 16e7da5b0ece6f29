package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// mvtRenderer renders a z/x/y vector tile of the current parcels as the
// PostGIS tile servers (Martin, pg_tileserv) do: ST_AsMVT of
// ST_AsMVTGeom in the tile's envelope, extent 4096, buffer 64, clipped;
// the features with their feature id and properties, in feature id order.
type mvtRenderer struct{ conn *pgx.Conn }

func (m mvtRenderer) render(t *testing.T, z, x, y int) []byte {
	t.Helper()
	var b []byte
	require.NoError(t, m.conn.QueryRow(context.Background(), `
		SELECT coalesce(ST_AsMVT(q, 'parcels', 4096, 'geom', 'feature_id'), '')
		FROM (SELECT p.feature_id, p.properties::text AS props,
		             ST_AsMVTGeom(ST_Transform(p.geom, 3857), ST_TileEnvelope($1, $2, $3), 4096, 64, true) AS geom
		      FROM geoingest_current_parcels p
		      WHERE p.geom && ST_Transform(ST_TileEnvelope($1, $2, $3, margin => 64.0 / 4096), 4326)
		      ORDER BY p.feature_id) q
		WHERE q.geom IS NOT NULL`, z, x, y).Scan(&b))
	return b
}

// tileRange is the tiles at zoom z that cover [minLon, maxLon] x [minLat,
// maxLat], with one more tile around.
func tileRange(z int, minLon, minLat, maxLon, maxLat float64) (x0, x1, y0, y1 int) {
	n := math.Exp2(float64(z))
	tx := func(lon float64) int { return int(math.Floor((lon + 180) / 360 * n)) }
	ty := func(lat float64) int {
		r := lat * math.Pi / 180
		return int(math.Floor((1 - math.Log(math.Tan(r)+1/math.Cos(r))/math.Pi) / 2 * n))
	}
	return tx(minLon) - 1, tx(maxLon) + 1, ty(maxLat) - 1, ty(minLat) + 1
}

type expiredList struct {
	Deepest   int  `json:"deepest_zoom"`
	Truncated bool `json:"truncated"`
	Tiles     []struct {
		Z, X, Y int
	} `json:"tiles"`
}

// TestTileCachePurgedByExpiredTiles: a tile cache keyed by z/x/y, filled
// from the first version of a source, then purged of exactly the tiles
// `changes --job J --tiles` lists for the second version, serves at every
// tile of zooms 12 to 17 over both versions' extent the same bytes as a
// full re-render of the new version; and the list is a small part of the
// tiles (a purge of everything would pass the first check). With a cap
// the list stops at a shallower zoom, and every changed tile deeper down
// descends from a listed tile of that zoom.
func TestTileCachePurgedByExpiredTiles(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	path := filepath.Join(t.TempDir(), "grid.geojson")
	var ids, v2 []int
	for i := 0; i < 1000; i++ {
		ids = append(ids, i)
		if i != 500 && i != 777 {
			v2 = append(v2, i)
		}
	}
	v2 = append(v2, 1500) // added, in a new row of the grid
	moved := map[int]bool{1: true, 2: true, 3: true}
	renamed := map[int]bool{260: true, 261: true, 900: true}
	require.NoError(t, os.WriteFile(path, idVersion(ids, false, nil, nil), 0o644))
	code, out, errOut := run(t, env, "ingest", "--json", "--key", "@id", path)
	require.Equal(t, 0, code, errOut)
	first := parseLines(t, out)[0]

	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	r := mvtRenderer{conn}
	type key struct{ z, x, y int }
	cache := map[key][]byte{}
	const minZ, maxZ = 12, 17
	for z := minZ; z <= maxZ; z++ {
		x0, x1, y0, y1 := tileRange(z, 2.0, 48.0, 2.07, 48.04)
		for x := x0; x <= x1; x++ {
			for y := y0; y <= y1; y++ {
				cache[key{z, x, y}] = r.render(t, z, x, y)
			}
		}
	}

	// The first version's own list covers its extent.
	code, out, errOut = run(t, env, "changes", "--job", first.JobID, "--tiles", "--zoom", "12-17", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var firstList expiredList
	require.NoError(t, json.Unmarshal([]byte(out), &firstList), out)
	require.Equal(t, maxZ, firstList.Deepest)

	require.NoError(t, os.WriteFile(path, idVersion(v2, false, moved, renamed), 0o644))
	code, out, errOut = run(t, env, "ingest", "--json", "--key", "@id", path)
	require.Equal(t, 0, code, errOut)
	second := parseLines(t, out)[0]
	require.Equal(t, "written", second.Outcome)
	code, out, errOut = run(t, env, "changes", "--job", second.JobID, "--tiles", "--zoom", "12-17", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var list expiredList
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	require.Equal(t, maxZ, list.Deepest)
	require.False(t, list.Truncated)
	listed := map[key]bool{}
	for _, tl := range list.Tiles {
		listed[key{tl.Z, tl.X, tl.Y}] = true
	}
	// The table format is the expire-list format: one z/x/y a line.
	code, out, errOut = run(t, env, "changes", "--job", second.JobID, "--tiles", "--zoom", "12-17")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf("%d/%d/%d\n", list.Tiles[0].Z, list.Tiles[0].X, list.Tiles[0].Y))

	changed, purged := 0, 0
	for k := range cache {
		if listed[k] {
			delete(cache, k)
			purged++
		}
	}
	for z := minZ; z <= maxZ; z++ {
		x0, x1, y0, y1 := tileRange(z, 2.0, 48.0, 2.07, 48.04)
		for x := x0; x <= x1; x++ {
			for y := y0; y <= y1; y++ {
				k := key{z, x, y}
				fresh := r.render(t, z, x, y)
				served, ok := cache[k]
				if !ok {
					served = fresh // a purged tile is rendered again on its next request
				}
				require.True(t, bytes.Equal(fresh, served), "tile %d/%d/%d served from the cache differs from a re-render", z, x, y)
				if !ok {
					changed++
				}
			}
		}
	}
	require.Greater(t, changed, 0)
	total := len(cache) + purged
	t.Logf("%d tiles at zooms %d-%d, %d listed (%d in the range rendered), the first version listed %d", total, minZ, maxZ, len(list.Tiles), purged, len(firstList.Tiles))
	require.Less(t, purged*3, total, "the list is a small part of the tiles")

	// A cap: the list stops at a shallower zoom, and every listed tile of
	// a deeper zoom descends from one of the deepest zoom listed.
	code, out, errOut = run(t, env, "changes", "--job", second.JobID, "--tiles", "--zoom", "12-17", "--max-tiles", "40", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var capped expiredList
	require.NoError(t, json.Unmarshal([]byte(out), &capped), out)
	require.True(t, capped.Truncated)
	require.Less(t, capped.Deepest, maxZ)
	require.LessOrEqual(t, len(capped.Tiles), 40)
	top := map[key]bool{}
	for _, tl := range capped.Tiles {
		if tl.Z == capped.Deepest {
			top[key{tl.Z, tl.X, tl.Y}] = true
		}
	}
	for _, tl := range list.Tiles {
		if tl.Z > capped.Deepest {
			s := tl.Z - capped.Deepest
			require.True(t, top[key{capped.Deepest, tl.X >> s, tl.Y >> s}], "tile %d/%d/%d has no listed ancestor", tl.Z, tl.X, tl.Y)
		}
	}

	// The same list in the JSON API; a job with no record is 404.
	base := startConsole(t, env)
	var api expiredList
	getJSON(t, base+"/api/jobs/"+second.JobID+"/tiles?zoom=12-17", 200, &api)
	require.Equal(t, list, api)
	var e map[string]string
	getJSON(t, base+"/api/jobs/nope/tiles", 404, &e)
	getJSON(t, base+"/api/jobs/"+second.JobID+"/tiles?zoom=9-3", 400, &e)
}
