package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/jackc/pgx/v5"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// idVersion is a GeoJSON FeatureCollection of n unit squares whose Feature
// id members are "P-<i>" (strings) or i (numbers, when numeric), in the
// order of ids, with the property name; moved[i] shifts square i's
// geometry far (so only the id can match it), renamed[i] changes its name.
func idVersion(ids []int, numeric bool, moved, renamed map[int]bool) []byte {
	type feature struct {
		Type       string         `json:"type"`
		ID         any            `json:"id"`
		Properties map[string]any `json:"properties"`
		Geometry   map[string]any `json:"geometry"`
	}
	fc := struct {
		Type     string    `json:"type"`
		Features []feature `json:"features"`
	}{Type: "FeatureCollection"}
	for _, i := range ids {
		x, y := 2.0+float64(i%50)*0.001, 48.0+float64(i/50)*0.001
		if moved[i] {
			x += 0.06 // beyond the grid: no other square there
		}
		sq := [][][]float64{{{x, y}, {x + 0.0009, y}, {x + 0.0009, y + 0.0009}, {x, y + 0.0009}, {x, y}}}
		name := fmt.Sprintf("parcel %d", i)
		if renamed[i] {
			name += " (sold)"
		}
		var id any = fmt.Sprintf("P-%d", i)
		if numeric {
			id = i
		}
		fc.Features = append(fc.Features, feature{Type: "Feature", ID: id,
			Properties: map[string]any{"name": name}, Geometry: map[string]any{"type": "Polygon", "coordinates": sq}})
	}
	b, _ := json.Marshal(fc)
	return b
}

// TestFeatureIDKeyAcrossVersions: with --key @id (and the route option
// key=@id), a parcel keeps its feature_id across versions by its GeoJSON
// Feature id member, even when its geometry moved so far that no other
// rule could match it and the file's order changed; without the key the
// moved parcels are removed and added. The id is kept as the property
// "@id".
func TestFeatureIDKeyAcrossVersions(t *testing.T) {
	t.Parallel()
	for _, numeric := range []bool{false, true} {
		t.Run(fmt.Sprintf("numeric=%v", numeric), func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewDB(t)
			env := map[string]string{"DATABASE_URL": db}
			path := filepath.Join(t.TempDir(), "ids.geojson")
			var ids []int
			for i := 0; i < 200; i++ {
				ids = append(ids, i)
			}
			require.NoError(t, os.WriteFile(path, idVersion(ids, numeric, nil, nil), 0o644))
			code, out, errOut := run(t, env, "ingest", "--json", "--key", "@id", path)
			require.Equal(t, 0, code, errOut)
			first := parseLines(t, out)[0]
			require.Equal(t, "written", first.Outcome)
			want := `"P-7"`
			if numeric {
				want = "7"
			}
			require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM parcels WHERE (properties -> '@id')::text = $1`, want))

			// v2: reversed order, 5 moved far, 3 renamed, 2 removed, 1 added.
			before := map[string]int64{}
			rows := queryPairs(t, db, `SELECT properties ->> '@id', feature_id FROM parcels`)
			for k, v := range rows {
				before[k] = v
			}
			var v2 []int
			for i := 199; i >= 0; i-- {
				if i != 50 && i != 51 {
					v2 = append(v2, i)
				}
			}
			v2 = append(v2, 500)
			moved := map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true}
			renamed := map[int]bool{10: true, 11: true, 12: true}
			require.NoError(t, os.WriteFile(path, idVersion(v2, numeric, moved, renamed), 0o644))
			code, out, errOut = run(t, env, "ingest", "--json", "--key", "@id", path)
			require.Equal(t, 0, code, errOut)
			second := parseLines(t, out)[0]
			require.Equal(t, "written", second.Outcome)
			code, out, errOut = run(t, env, "changes", "--job", second.JobID, "--format", "json")
			require.Equal(t, 0, code, errOut)
			var got struct {
				Counts  map[string]int64 `json:"counts"`
				Matched map[string]int64 `json:"matched"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &got), out)
			require.Equal(t, map[string]int64{"added": 1, "removed": 2, "geometry": 5, "attributes": 3, "unchanged": 190}, got.Counts)
			require.Equal(t, int64(198), got.Matched["key"])
			after := queryPairs(t, db, `SELECT properties ->> '@id', feature_id FROM parcels p JOIN jobs j ON j.job_ref = p.job_ref WHERE j.status = 'current'`)
			require.Len(t, after, 199)
			for k, fid := range after {
				if k == "P-500" || k == "500" {
					continue
				}
				require.Equal(t, before[k], fid, "feature %s keeps its feature_id", k)
			}

			// Without the key, the moved parcels cannot be followed.
			other := pgtest.NewDB(t)
			oenv := map[string]string{"DATABASE_URL": other}
			opath := filepath.Join(t.TempDir(), "ids.geojson")
			require.NoError(t, os.WriteFile(opath, idVersion(ids, numeric, nil, nil), 0o644))
			code, _, errOut = run(t, oenv, "ingest", opath)
			require.Equal(t, 0, code, errOut)
			require.EqualValues(t, 0, queryInt(t, other, `SELECT count(*) FROM parcels WHERE properties ? '@id'`), "the id is kept only when the key names it")
			require.NoError(t, os.WriteFile(opath, idVersion(v2, numeric, moved, renamed), 0o644))
			code, out, errOut = run(t, oenv, "ingest", "--json", opath)
			require.Equal(t, 0, code, errOut)
			code, out, errOut = run(t, oenv, "changes", "--job", parseLines(t, out)[0].JobID, "--format", "json")
			require.Equal(t, 0, code, errOut)
			require.NoError(t, json.Unmarshal([]byte(out), &got), out)
			require.Equal(t, int64(1+5), got.Counts["added"])
			require.Equal(t, int64(2+5), got.Counts["removed"])
		})
	}
}

// queryPairs runs a query of (text, bigint) rows into a map.
func queryPairs(t *testing.T, db, sql string) map[string]int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), sql)
	require.NoError(t, err)
	m := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		require.NoError(t, rows.Scan(&k, &v))
		m[k] = v
	}
	require.NoError(t, rows.Err())
	return m
}
