package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeNamesTheRouteTheSchemaRefuses: a route whose options serve can
// only check against its --schema (a mapping the file lacks, a mapping of
// another target, a key that is not one of the mapping's columns) stops
// serve at start naming that route, as every other bad route does: among
// several routes, the message says which to fix.
func TestServeNamesTheRouteTheSchemaRefuses(t *testing.T) {
	t.Parallel()
	schema := filepath.Join(t.TempDir(), "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(`targets:
  parcels:
    columns:
      - {name: apn, type: text}
mappings:
  - name: county
    target: parcels
    fields:
      apn: {from: APN}
`), 0o644))
	for bad, says := range map[string]string{
		"c/=parcels?mapping=nope":              `not a mapping of schema`,
		"c/=admin_units?mapping=county":        `maps to parcels, not to the job's target admin_units`,
		"c/=parcels?mapping=county&key=APN":    `the key names the mapping's columns`,
		"c/=parcels?key=apn&mapping=county&x=": `want OPTION=VALUE`, // ParseRoute's own, for comparison
	} {
		code, _, errOut := run(t, map[string]string{"GEOINGEST_INBOX": t.TempDir()}, "serve", "--until-idle", "1s", "--metrics-addr", "",
			"--schema", schema, "--route", "ok/=parcels?mapping=county&key=apn", "--route", bad)
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, says)
		require.Contains(t, errOut, `route "c/=`, "the message names the route: %s", errOut)
	}
}

// TestBackfillNamesTheRouteTheSchemaRefuses: backfill checks its routes'
// own mapping= and key= against --schema before it lists anything, naming
// the route, where each of the route's files failed with the same message
// (and the run ended "N failed").
func TestBackfillNamesTheRouteTheSchemaRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(`targets:
  parcels:
    columns:
      - {name: apn, type: text}
mappings:
  - name: county
    target: parcels
    fields:
      apn: {from: APN}
`), 0o644))
	data := filepath.Join(dir, "data")
	require.NoError(t, os.MkdirAll(filepath.Join(data, "c"), 0o755))
	for bad, says := range map[string]string{
		"c/=parcels?mapping=nope":           `not a mapping of schema`,
		"c/=parcels?mapping=county&key=APN": `the key names the mapping's columns`,
	} {
		// No database: the check comes before backfill connects.
		code, out, errOut := run(t, map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"},
			"backfill", "--dir", data, "--schema", schema, "--route", bad)
		require.Equal(t, 1, code, out+errOut)
		require.Contains(t, errOut, says)
		require.Contains(t, errOut, `route "c/=`, "the message names the route: %s", errOut)
	}
}
