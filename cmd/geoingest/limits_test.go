package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/stretchr/testify/require"
)

// square is a GeoJSON feature: a small parcel near Paris with the given
// properties and n vertices (n >= 5, the ring closed).
func square(props string, n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"Feature","properties":` + props + `,"geometry":{"type":"Polygon","coordinates":[[`)
	for i := 0; i < n-1; i++ {
		// Along the edges of a 0.001-degree square, counter-clockwise.
		t := float64(i) / float64(n-1) * 4
		x, y := 2.35, 48.85
		switch {
		case t < 1:
			x += 0.001 * t
		case t < 2:
			x, y = x+0.001, y+0.001*(t-1)
		case t < 3:
			x, y = x+0.001*(3-t), y+0.001
		default:
			y += 0.001 * (4 - t)
		}
		fmt.Fprintf(&b, "[%.7f,%.7f],", x, y)
	}
	b.WriteString(`[2.35,48.85]]]}}`)
	return b.String()
}

// TestIngestOverLimits: through the CLI and a real PostGIS, an upload
// over each limit (set by its flag, or its environment variable) fails
// permanently with a message naming the file, the layer, the feature and
// the flag that raises the limit; its claim is FAILED with that message,
// and nothing is written, not even the features before the one over the
// limit. Raised, the limit lets the same job (the same key: limits are no
// job parameter) be written.
func TestIngestOverLimits(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	fc := func(fs ...string) []byte {
		return []byte(`{"type":"FeatureCollection","features":[` + strings.Join(fs, ",") + `]}`)
	}
	ok := square(`{"id":1}`, 5)
	for _, tc := range []struct {
		name   string
		file   string
		data   []byte
		flags  []string
		env    map[string]string
		want   string
		raised []string // flags under which the same upload loads
	}{
		{"vertices", "many.geojson", fc(ok, square(`{"id":2}`, 40)), []string{"--max-vertices", "20"}, nil,
			`layer "many", feature 1: more than 20 vertices, over the limit (raise it with --max-vertices or GEOINGEST_MAX_VERTICES)`, []string{"--max-vertices", "40"}},
		{"vertices from the environment", "many.geojson", fc(ok, square(`{"id":2}`, 40)), nil, map[string]string{"GEOINGEST_MAX_VERTICES": "20"},
			`layer "many", feature 1: more than 20 vertices`, []string{"--max-vertices", "40"}},
		{"feature bytes, GeoJSON sequence", "lines.geojsonl", []byte(ok + "\n" + square(`{"s":"`+strings.Repeat("x", 3000)+`"}`, 5) + "\n"), []string{"--max-feature-bytes", "2KiB"}, nil,
			`layer "lines", feature 1: more than 2048 bytes in one feature, over the limit (raise it with --max-feature-bytes or GEOINGEST_MAX_FEATURE_BYTES)`, []string{"--max-feature-bytes", "1MB"}},
		{"property bytes", "long.geojson", fc(ok, square(`{"note":"`+strings.Repeat("x", 200)+`"}`, 5)), nil, map[string]string{"GEOINGEST_MAX_PROPERTY_BYTES": "100B"},
			`layer "long", feature 1: a property value of more than 100 bytes, over the limit (raise it with --max-property-bytes or GEOINGEST_MAX_PROPERTY_BYTES)`, []string{"--max-property-bytes", "200KiB"}},
		{"properties", "wide.geojson", fc(ok, square(`{"a":1,"b":2,"c":3,"d":4}`, 5)), []string{"--max-properties", "3"}, nil,
			`layer "wide", feature 1: more than 3 properties, over the limit (raise it with --max-properties or GEOINGEST_MAX_PROPERTIES)`, []string{"--max-properties", "4"}},
		{"features", "three.geojson", fc(ok, ok, ok), []string{"--max-features", "2"}, nil,
			`layer "three", feature 2: more than 2 features in the upload, over the limit (raise it with --max-features or GEOINGEST_MAX_FEATURES)`, []string{"--max-features", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"DATABASE_URL": db}
			for k, v := range tc.env {
				env[k] = v
			}
			file := filepath.Join(t.TempDir(), tc.file)
			require.NoError(t, os.WriteFile(file, tc.data, 0o644))
			// Each case its own pipeline version: its own jobs.
			pv := []string{"--pipeline-version", "limits-" + strings.ReplaceAll(tc.name, " ", "-")}
			args := append(append(append([]string{"ingest", "--json"}, pv...), tc.flags...), file)
			code, out, _ := run(t, env, args...)
			require.Equal(t, 1, code, out)
			ls := parseLines(t, out)
			require.Len(t, ls, 1)
			l := ls[0]
			require.Equal(t, "failed", l.Outcome)
			require.Contains(t, l.Error, "file://"+file+": "+tc.want)
			require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims WHERE job_id = $1 AND state = 'FAILED' AND last_error = $2`, l.JobID, l.Error))
			require.Zero(t, queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_id = $1`, l.JobID))
			require.Zero(t, queryInt(t, db, `SELECT count(*) FROM parcels p JOIN jobs j ON j.job_ref = p.job_ref WHERE j.job_id = $1`, l.JobID))

			// Raised, the same job (same key) is written.
			delete(env, "GEOINGEST_MAX_VERTICES")
			delete(env, "GEOINGEST_MAX_PROPERTY_BYTES")
			args = append(append(append([]string{"ingest", "--json"}, pv...), tc.raised...), file)
			code, out, _ = run(t, env, args...)
			require.Equal(t, 0, code, out)
			ls = parseLines(t, out)
			require.Equal(t, "written", ls[0].Outcome, out)
			require.Equal(t, l.JobID, ls[0].JobID, "a limit is not part of the job key")
		})
	}
}

// TestIngestOverLimitsZip: a zip's layers, and a shapefile's declared
// point count, through the CLI.
func TestIngestOverLimitsZip(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	six := "../../testdata/corpus/six_counties/six_counties"
	var parts []any
	for _, layer := range []string{"a/one", "b/two"} {
		for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
			data, err := os.ReadFile(six + ext)
			require.NoError(t, err)
			parts = append(parts, layer+ext, data)
		}
	}
	zp := testfiles.Zip(t, filepath.Join(t.TempDir(), "counties.zip"), parts...)
	code, out, _ := run(t, env, "ingest", "--json", "--max-layers", "1", zp)
	require.Equal(t, 1, code, out)
	l := parseLines(t, out)[0]
	require.Contains(t, l.Error, "file://"+zp+": upload: more than 1 layers, over the limit (raise it with --max-layers or GEOINGEST_MAX_LAYERS)")
	code, out, _ = run(t, env, "ingest", "--json", "--max-vertices", "100", zp)
	require.Equal(t, 1, code, out)
	l = parseLines(t, out)[0]
	require.Regexp(t, `file://`+zp+`!a/one.shp: layer "a/one", feature \d+: more than 100 vertices, over the limit`, l.Error)
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM jobs`))
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM parcels`))

	// A limit that does not parse stops the command before any job.
	code, _, errOut := run(t, map[string]string{"DATABASE_URL": db, "GEOINGEST_MAX_FEATURE_BYTES": "lots"}, "ingest", zp)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `GEOINGEST_MAX_FEATURE_BYTES="lots": not a size`)
	code, _, errOut = run(t, env, "ingest", "--max-vertices", "-1", zp)
	require.Equal(t, 2, code, "a bad flag value is a usage error")
	require.Contains(t, errOut, "--max-vertices -1: want 0 or more")
}

// TestLimitFlagsEnvironment: every limit is read from its environment
// variable, and its flag overrides it.
func TestLimitFlagsEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"GEOINGEST_MAX_VERTICES":       "11",
		"GEOINGEST_MAX_FEATURE_BYTES":  "12KiB",
		"GEOINGEST_MAX_PROPERTY_BYTES": "13MB",
		"GEOINGEST_MAX_PROPERTIES":     "14",
		"GEOINGEST_MAX_LAYERS":         "15",
		"GEOINGEST_MAX_FEATURES":       "16",
		"GEOINGEST_MAX_ZIP_ENTRIES":    "17",
		"GEOINGEST_MAX_ZIP_BYTES":      "18GiB",
		"GEOINGEST_MAX_ZIP_RATIO":      "19",
		"GEOINGEST_READ_TIMEOUT":       "20s",
		"GEOINGEST_READ_CPU":           "21s",
		"GEOINGEST_READ_MEMORY":        "22MiB",
	}
	m := &Main{Getenv: func(k string) string { return env[k] }}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var lf limitFlags
	m.addLimitFlags(fs, &lf)
	require.NoError(t, fs.Parse(nil))
	require.NoError(t, m.envError())
	l, err := lf.limits()
	require.NoError(t, err)
	require.Equal(t, geomio.Limits{MaxVertices: 11, MaxRecordBytes: 12 << 10, MaxPropertyBytes: 13e6, MaxProperties: 14, MaxLayers: 15,
		MaxFeatures: 16, MaxEntries: 17, MaxUncompressedBytes: 18 << 30, MaxCompressionRatio: 19,
		ReadTimeout: 20 * time.Second, ReadCPU: 21 * time.Second, ReadMemory: 22 << 20}, l)
	require.NoError(t, fs.Parse([]string{"--max-vertices", "21", "--max-feature-bytes", "1MiB"}))
	l, err = lf.limits()
	require.NoError(t, err)
	require.EqualValues(t, 21, l.MaxVertices)
	require.EqualValues(t, 1<<20, l.MaxRecordBytes)

	// Unset, they are geomio's defaults.
	m = &Main{Getenv: func(string) string { return "" }}
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	lf = limitFlags{}
	m.addLimitFlags(fs, &lf)
	require.NoError(t, fs.Parse(nil))
	l, err = lf.limits()
	require.NoError(t, err)
	require.Equal(t, geomio.DefaultLimits, l)
}
