package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/internal/pgtest"
	"github.com/stretchr/testify/require"
)

func TestJobsCommand(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	bad := filepath.Join(t.TempDir(), "bad.geojson")
	require.NoError(t, os.WriteFile(bad, []byte(`{"type":"FeatureCollection","features":[{"type":"Feat`), 0o644))
	code, out, _ := run(t, env, "ingest", "--json", epinay, bad)
	require.Equal(t, 1, code)
	ls := parseLines(t, out)
	good, failed := ls[0], ls[1]

	code, out, errOut := run(t, env, "jobs")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, good.JobID[:12]+` +COMMITTED +current +file://.*cadastre-91216-parcelles.json +parcels +4241 `, out)
	require.Regexp(t, failed.JobID[:12]+` +FAILED +- +file://`+bad+`.*invalid json`, out)

	code, out, errOut = run(t, env, "jobs", "list", "--state", "FAILED", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var js []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &js))
	require.Len(t, js, 1)
	require.Equal(t, failed.JobID, js[0]["job_id"])
	require.Contains(t, js[0]["last_error"], "file://"+bad)

	code, out, errOut = run(t, env, "jobs", "show", good.JobID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "current: the source's current generation")
	require.Contains(t, out, "4241, 3836490.43 m²")

	code, out, errOut = run(t, env, "jobs", "sources")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `cadastre-91216-parcelles.json +parcels +1 +`+good.JobID[:12]+` +1 +4241 +3836490`, out)

	code, _, errOut = run(t, env, "jobs", "show", "0000")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no such job")
}
