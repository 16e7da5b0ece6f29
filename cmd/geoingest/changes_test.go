package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/pgtest"
	"github.com/stretchr/testify/require"
)

// TestChangesCommandCountsAKeyedVersion ingests the Épinay cadastre, then
// a version of it with known changes under the same path, both with
// --key id, and checks `changes --job J --format json` against the
// truth: 10 attributes changed, 3 geometries moved, 5 removed, 2 added.
func TestChangesCommandCountsAKeyedVersion(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}
	raw, err := os.ReadFile(epinay)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "epinay.geojson")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	code, out, errOut := run(t, env, "ingest", "--json", "--key", "id", path)
	require.Equal(t, 0, code, errOut)
	first := parseLines(t, out)[0]

	var fc struct {
		Type     string           `json:"type"`
		Features []map[string]any `json:"features"`
	}
	require.NoError(t, json.Unmarshal(raw, &fc))
	fs := fc.Features
	for i := 0; i < 10; i++ { // attributes
		fs[i]["properties"].(map[string]any)["updated"] = "2026-01-01"
	}
	for i := 10; i < 13; i++ { // geometry: the whole parcel shifted a little
		ring := fs[i]["geometry"].(map[string]any)["coordinates"].([]any)[0].([]any)
		for _, pt := range ring {
			p := pt.([]any)
			p[0] = p[0].(float64) + 1e-6
		}
	}
	added := []map[string]any{}
	for i := 20; i < 22; i++ { // added: copies of removed parcels' shapes far away, new ids
		cp := map[string]any{"type": "Feature", "properties": map[string]any{"id": "NEW" + itoa(int64(i))},
			"geometry": map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{3, 49}, {3.001, 49}, {3.001, 49.001}, {3, 49}}}}}
		added = append(added, cp)
	}
	fs = append(fs[:100], fs[105:]...) // removed: 5
	fc.Features = append(fs, added...)
	v2, err := json.Marshal(fc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, v2, 0o644))
	code, out, errOut = run(t, env, "ingest", "--json", "--key", "id", path)
	require.Equal(t, 0, code, errOut)
	second := parseLines(t, out)[0]
	require.Equal(t, "written", second.Outcome)

	code, out, errOut = run(t, env, "changes", "--job", second.JobID, "--format", "json")
	require.Equal(t, 0, code, errOut)
	var got struct {
		Job     string           `json:"job"`
		Base    string           `json:"base_job"`
		Counts  map[string]int64 `json:"counts"`
		Feature []struct {
			Kind string `json:"kind"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, first.JobID, got.Base)
	require.Equal(t, map[string]int64{"added": 2, "removed": 5, "geometry": 3, "attributes": 10, "unchanged": 4241 - 5 - 13}, got.Counts)
	require.Len(t, got.Feature, 20)

	code, out, errOut = run(t, env, "changes", "file://"+path)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "4241") // the first version: every feature added
	code, _, _ = run(t, env, "changes", "--job", "nope", "--format", "xml")
	require.Equal(t, 2, code)
}
