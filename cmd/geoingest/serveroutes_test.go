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
		require.Equal(t, 2, code, errOut) // a usage error
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
		require.Equal(t, 2, code, out+errOut) // a usage error
		require.Contains(t, errOut, says)
		require.Contains(t, errOut, `route "c/=`, "the message names the route: %s", errOut)
	}
}

// TestRouteOptionErrorsAreUsageErrors: a route that does not parse (an
// option no route takes, a guard threshold that is no fraction, a policy
// it does not know) is a bad argument, as the ingest flag of the same
// job parameter is: serve, backfill and inspect exit 2 naming the route,
// where they exited 1 as for a failure.
func TestRouteOptionErrorsAreUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "c", "x.geojson")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte(`{"type":"FeatureCollection","features":[]}`), 0o644))
	noDB := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "GEOINGEST_INBOX": dir}
	for bad, says := range map[string]string{
		"c/=parcels?shrink=0.3":        `option "shrink"`,
		"c/=parcels?guard-shrink=1.5":  `guard-shrink "1.5": want a fraction`,
		"c/=parcels?guard-extent=big":  `guard-extent "big"`,
		"c/=parcels?invalid=sometimes": `invalid`,
		"c/=nowhere":                   `unknown target table`,
	} {
		for _, args := range [][]string{
			{"serve", "--until-idle", "1s", "--metrics-addr", "", "--route", bad},
			{"backfill", "--dir", dir, "--route", bad},
			{"inspect", "--object-key", "c/x.geojson", "--route", bad, file},
		} {
			code, out, errOut := run(t, noDB, args...)
			require.Equal(t, 2, code, "%v: %s%s", args, out, errOut)
			require.Contains(t, errOut, says, args)
			require.Contains(t, errOut, `route "c/=`, "%v: the message names the route: %s", args, errOut)
		}
	}
}

// TestBadFlagValuesAreUsageErrors: a flag value a command cannot take (a
// negative limit, --workers 0, --queue-url with --inbox, ...) is a usage
// error, exit 2, with what is wrong, as a bad route or --format is: they
// exited 1, as for a failure.
func TestBadFlagValuesAreUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "x.geojson")
	require.NoError(t, os.WriteFile(file, []byte(`{"type":"FeatureCollection","features":[]}`), 0o644))
	noDB := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "GEOINGEST_INBOX": dir}
	serve := []string{"serve", "--until-idle", "1s", "--metrics-addr", ""}
	for _, c := range []struct {
		args []string
		says string
	}{
		{append(serve, "--workers", "0"), "--workers must be at least 1"},
		{append(serve, "--reader-spares", "-1"), "--reader-spares must be 0 or more"},
		{append(serve, "--ack-replicas", "-1"), "--ack-replicas must be 0 or more"},
		{append(serve, "--compact-reindex-factor", "0.5"), "--compact-reindex-factor must be 0 (off) or more than 1"},
		{append(serve, "--queue-url", "https://sqs.example/q", "--inbox", dir), "give --queue-url or --inbox, not both"},
		{append(serve, "--max-features", "-5"), "--max-features -5: want 0 or more"},
		{[]string{"ingest", "--max-vertices", "-1", file}, "--max-vertices -1: want 0 or more"},
		{[]string{"backfill", "--dir", dir, "--max-layers", "-1"}, "--max-layers -1: want 0 or more"},
		{[]string{"inspect", "--max-properties", "-1", file}, "--max-properties -1: want 0 or more"},
		{[]string{"replay", "--max-vertices", "-1", file}, "--max-vertices -1: want 0 or more"},
	} {
		code, out, errOut := run(t, noDB, c.args...)
		require.Equal(t, 2, code, "%v: %s%s", c.args, out, errOut)
		require.Contains(t, errOut, c.says, c.args)
	}
}
