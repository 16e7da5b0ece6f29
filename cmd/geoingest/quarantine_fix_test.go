package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestQuarantineFixedVersionLandsOnce: the way quarantined features land
// is the uploader's fixed file, uploaded again as the source's next
// version. A file of 32 features lands 30 and quarantines a point and a
// feature with no geometry; the export names both; the fixed file (the
// two given polygons) is ingested at the same path: all 32 are current,
// none twice (not 30 + 32, not 30 + 2), verify reconciles, and the old
// quarantine stays as the replaced version's record. A duplicate delivery
// of the fixed version, and a late one of the first, change nothing.
func TestQuarantineFixedVersionLandsOnce(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	dir := t.TempDir()
	path := filepath.Join(dir, "county.geojson")
	bad := []string{
		`{"type":"Feature","properties":{"id":"point"},"geometry":{"type":"Point","coordinates":[2.3,48.85]}}`,
		`{"type":"Feature","properties":{"id":"nogeom"},"geometry":null}`,
	}
	v1 := `{"type":"FeatureCollection","features":[` + squaresN(30) + `,` + strings.Join(bad, ",") + `]}`
	require.NoError(t, os.WriteFile(path, []byte(v1), 0o644))
	code, out, errOut := run(t, env, "ingest", "--json", path)
	require.Equal(t, 0, code, out+errOut)
	var r1 struct {
		JobID       string `json:"job_id"`
		Outcome     string `json:"outcome"`
		Features    int64  `json:"features"`
		Quarantined int64  `json:"quarantined"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &r1))
	require.Equal(t, "written", r1.Outcome)
	require.EqualValues(t, 30, r1.Features)
	require.EqualValues(t, 2, r1.Quarantined)

	code, out, errOut = run(t, env, "quarantine", "export", r1.JobID, "--format", "geojson")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"point"`)
	require.Contains(t, out, `"nogeom"`)

	// The uploader fixes the two and uploads the file again: the next
	// version of the source.
	require.NoError(t, os.WriteFile(path, []byte(squares(32)), 0o644))
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(path, later, later))
	code, out, errOut = run(t, env, "ingest", "--json", path)
	require.Equal(t, 0, code, out+errOut)
	var r2 struct {
		JobID       string `json:"job_id"`
		Outcome     string `json:"outcome"`
		Features    int64  `json:"features"`
		Quarantined int64  `json:"quarantined"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &r2))
	require.Equal(t, "written", r2.Outcome)
	require.EqualValues(t, 32, r2.Features)
	require.Zero(t, r2.Quarantined)
	db := env["DATABASE_URL"]
	current := func() int64 { return queryInt(t, db, `SELECT count(*) FROM parcels`) }
	require.EqualValues(t, 32, current(), "the fixed version replaced the first: each feature once")
	require.Equal(t, "replaced", queryText(t, db, `SELECT status FROM jobs WHERE job_id = $1`, r1.JobID))
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)

	// The first version's quarantine stays, as its record.
	code, out, errOut = run(t, env, "quarantine", "list", "--format", "json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, r1.JobID)
	require.Contains(t, out, `"status": "replaced"`)
	require.EqualValues(t, 2, queryInt(t, db, `SELECT count(*) FROM geoingest_quarantine`))

	// A duplicate of the fixed version, and the first version again (an
	// old copy delivered late), change nothing.
	code, out, errOut = run(t, env, "ingest", "--json", path)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, `"already-present"`)
	require.NoError(t, os.WriteFile(path, []byte(v1), 0o644))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(path, old, old))
	code, out, errOut = run(t, env, "ingest", "--json", path)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, `"already-present"`, "the first version's job is committed: a duplicate")
	require.EqualValues(t, 32, current())
	require.EqualValues(t, 2, queryInt(t, db, `SELECT count(*) FROM geoingest_quarantine`))
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
}

// squaresN is the features of squares(n), without the collection.
func squaresN(n int) string {
	return strings.TrimSuffix(strings.TrimPrefix(squares(n), `{"type":"FeatureCollection","features":[`), `]}`)
}
