package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// commandPaths are every command line that parses flags: each command, and
// report's subcommands (report itself only dispatches).
func commandPaths() [][]string {
	var ps [][]string
	for name := range commands {
		if name == "report" {
			for _, sub := range []string{"area", "admin-check", "refresh"} {
				ps = append(ps, []string{"report", sub})
			}
			continue
		}
		ps = append(ps, []string{name})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i][0]+ps[i][len(ps[i])-1] < ps[j][0]+ps[j][len(ps[j])-1] })
	return ps
}

// Every command reads its flags after a positional argument: --help after
// one prints the usage (exit 0), where a parser that stops at the first
// argument would take it for a path.
func TestEveryCommandTakesFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	ps := commandPaths()
	require.GreaterOrEqual(t, len(ps), 17)
	for _, p := range ps {
		code, _, errOut := run(t, nil, append(append(p, "some-path"), "--help")...)
		require.Equal(t, 0, code, "%v: %s", p, errOut)
		require.Contains(t, errOut, "Usage: geoingest "+p[0], p)
	}
}

// Every command says which flag it does not know, and after what, then
// exits 2 without doing anything.
func TestEveryCommandNamesAnUnknownFlagAfterAPath(t *testing.T) {
	t.Parallel()
	for _, p := range commandPaths() {
		code, out, errOut := run(t, nil, append(append(p, "parcels.shp"), "--tagret", "x")...)
		require.Equal(t, 2, code, "%v: %s", p, errOut)
		require.Empty(t, out, p)
		require.Contains(t, errOut, `unknown flag --tagret (after "parcels.shp"); a path that begins with "-" goes after "--"`, p)
		require.Contains(t, errOut, "Usage: geoingest "+p[0], p)
	}
}

func TestParseFlagsAnywhere(t *testing.T) {
	t.Parallel()
	newFS := func() (*flag.FlagSet, *string, *bool, *layerList) {
		fs := flag.NewFlagSet("geoingest test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		target := fs.String("target", "parcels", "")
		js := fs.Bool("json", false, "")
		var layers layerList
		fs.Var(&layers, "layer", "")
		return fs, target, js, &layers
	}
	for _, c := range []struct {
		args       []string
		target     string
		json       bool
		layers     []string
		positional []string
	}{
		{[]string{"a.shp", "--target", "admin_units"}, "admin_units", false, nil, []string{"a.shp"}},
		{[]string{"a.shp", "--json", "b.shp"}, "parcels", true, nil, []string{"a.shp", "b.shp"}},
		{[]string{"--json=false", "a.shp", "-target=x", "b"}, "x", false, nil, []string{"a.shp", "b"}},
		{[]string{"a", "--layer", "l1", "b", "--layer=l2"}, "parcels", false, []string{"l1", "l2"}, []string{"a", "b"}},
		{[]string{"a", "--", "--target", "-b.shp"}, "parcels", false, nil, []string{"a", "--target", "-b.shp"}},
		{[]string{"--target", "--", "a"}, "--", false, nil, []string{"a"}},
		{[]string{"-", "--json"}, "parcels", true, nil, []string{"-"}},
	} {
		fs, target, js, layers := newFS()
		require.NoError(t, parse(fs, c.args), c.args)
		require.Equal(t, c.target, *target, c.args)
		require.Equal(t, c.json, *js, c.args)
		require.Equal(t, c.layers, []string(*layers), c.args)
		require.Equal(t, c.positional, fs.Args(), c.args)
	}
	for _, bad := range [][]string{{"a", "--target"}, {"a", "--nope"}, {"---x"}, {"--json=maybe"}} {
		fs, _, _, _ := newFS()
		require.ErrorIs(t, parse(fs, bad), errUsage, bad)
	}
	fs, _, _, _ := newFS()
	require.ErrorIs(t, parse(fs, []string{"a", "-h"}), flag.ErrHelp)
}

// The issue's own command line: the flags after the file apply to it.
func TestIngestFlagsAfterThePath(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}
	code, out, errOut := run(t, env, "ingest", epinay, "--target", "admin_units", "--json")
	require.Equal(t, 0, code, errOut)
	ls := parseLines(t, out)
	require.Len(t, ls, 1, out)
	require.Equal(t, "written", ls[0].Outcome)
	require.EqualValues(t, 4241, ls[0].Features)
	var admin, parcels int64
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM admin_units), (SELECT count(*) FROM parcels)`).Scan(&admin, &parcels))
	require.EqualValues(t, 4241, admin)
	require.Zero(t, parcels)

	code, out, errOut = run(t, env, "jobs", "--format", "json", "show", ls[0].JobID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, ls[0].JobID)
}

// TestBadFormatIsAUsageError: a --format a command does not print is a
// usage error, exit 2, in every command that takes --format (pending,
// quarantine, jobs and deadletters exited 1), before any database is
// opened.
func TestBadFormatIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"pending", "list", "--format", "xml"},
		{"pending", "show", "0123456789ab", "--format", "xml"},
		{"quarantine", "list", "--format", "xml"},
		{"quarantine", "export", "0123456789ab", "--format", "xml"},
		{"jobs", "list", "--format", "xml"},
		{"deadletters", "list", "--format", "xml"},
		{"changes", "--job", "0123456789ab", "--format", "xml"},
		{"history", "--format", "xml"},
		{"report", "area", "--format", "xml"},
	} {
		code, out, errOut := run(t, map[string]string{}, args...)
		require.Equal(t, 2, code, "%v: %s%s", args, out, errOut)
		require.Contains(t, errOut, `--format "xml": want `, args)
	}
}

// TestBadLogFlagIsAUsageError: an unknown --log-format or --log-level
// (or their environment variables) exits 2 with the values it takes,
// before any database is opened, as a bad --format does; it exited 1.
func TestBadLogFlagIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"jobs", "list", "--log-format", "xml"}, `--log-format "xml": want text or json`},
		{nil, []string{"verify", "--log-level", "loud"}, `--log-level "loud": want debug, info, warn, error or none`},
		{map[string]string{"GEOINGEST_LOG_FORMAT": "yaml"}, []string{"jobs", "list"}, `--log-format "yaml"`},
		{nil, []string{"serve", "--log-format", "xml", "--inbox", t.TempDir()}, `--log-format "xml": want text or json`},
	} {
		code, out, errOut := run(t, c.env, c.args...)
		require.Equal(t, 2, code, "%v: %s%s", c.args, out, errOut)
		require.Contains(t, errOut, c.want, c.args)
	}
}

// TestBadFeedCursorIsAUsageError: `changes --follow --after CURSOR` with
// a cursor that is not a record's (not a whole number) exits 2 naming the
// flag, before any database is opened; it exited 1 once the database
// answered (here: none can).
func TestBadFeedCursorIsAUsageError(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "host=/nonexistent/geoingest dbname=none connect_timeout=1"}
	for _, c := range []string{"abc", "-1", " 900", "12.5", "99999999999999999999"} {
		code, out, errOut := run(t, env, "changes", "--follow", "--after", c)
		require.Equal(t, 2, code, "%q: %s%s", c, out, errOut)
		require.Contains(t, errOut, `--after "`+c+`": want the cursor of a record`, c)
	}
}

// TestBadJobParamsAreAUsageError: ingest and backfill refuse a --key with
// an empty field, a --duplicate-keys or --invalid policy they do not know
// with exit 2 and the reason, before any database is opened, as every
// other bad flag value; they exited 1.
func TestBadJobParamsAreAUsageError(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "host=/nonexistent/geoingest dbname=none connect_timeout=1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ingest", "--key", "STATE||APN", "parcels.geojson"}, "key field names must not be empty"},
		{[]string{"ingest", "--key", "APN", "--duplicate-keys", "refuse", "parcels.geojson"}, `duplicate-keys policy "refuse": want report or fail`},
		{[]string{"ingest", "--invalid", "drop", "parcels.geojson"}, `invalid-geometry policy "drop": want repair or fail`},
		{[]string{"backfill", "--dir", t.TempDir(), "--key", "|"}, "key field names must not be empty"},
		{[]string{"backfill", "--dir", t.TempDir(), "--duplicate-keys", "refuse"}, `duplicate-keys policy "refuse": want report or fail`},
	} {
		code, out, errOut := run(t, env, c.args...)
		require.Equal(t, 2, code, "%v: %s%s", c.args, out, errOut)
		require.Contains(t, errOut, "geoingest "+c.args[0]+": "+c.want, c.args)
	}
}

// TestPaddedKeyFieldIsNamed: a --key field with spaces around it is
// refused naming it ("APN " is padded), not as an empty field name.
func TestPaddedKeyFieldIsNamed(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "host=/nonexistent/geoingest dbname=none connect_timeout=1"}
	for key, want := range map[string]string{
		"APN ":        `key field "APN " is padded with spaces`,
		"STATE| APN":  `key field " APN" is padded with spaces`,
		" ":           "key field names must not be empty",
		"STATE||APN":  "key field names must not be empty",
		"STATE|STATE": `key field "STATE" given twice`,
	} {
		code, out, errOut := run(t, env, "ingest", "--key", key, "parcels.geojson")
		require.Equal(t, 2, code, "%q: %s%s", key, out, errOut)
		require.Contains(t, errOut, "geoingest ingest: "+want, key)
	}
}

// TestChangesRefusesAFlagOfAnotherMode: a flag of another of changes'
// modes (--since with --job, --after without --follow, --zoom without
// --tiles) exits 2 naming what it goes with, before any database is
// opened; it was silently ignored, so that `changes SOURCE --after C`
// printed every record as if no cursor had been given.
func TestChangesRefusesAFlagOfAnotherMode(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "host=/nonexistent/geoingest dbname=none connect_timeout=1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--job", "0123456789ab", "--since", "24h"}, "--since goes with SOURCE"},
		{[]string{"--follow", "--since", "24h"}, "--since goes with SOURCE"},
		{[]string{"parcels.geojson", "--after", "900"}, "--after goes with --follow"},
		{[]string{"--job", "0123456789ab", "--poll", "1s"}, "--poll goes with --follow"},
		{[]string{"--job", "0123456789ab", "--webhook", "http://127.0.0.1:9/hook"}, "--webhook goes with --follow"},
		{[]string{"--follow", "--expire-zoom", "10-14"}, "--expire-zoom goes with --follow --webhook URL"},
		{[]string{"--job", "0123456789ab", "--zoom", "0-6"}, "--zoom goes with --job JOB --tiles"},
		{[]string{"--job", "0123456789ab", "--max-tiles", "10"}, "--max-tiles goes with --job JOB --tiles or --expire-zoom"},
		{[]string{"--follow", "--format", "csv"}, "--format goes with SOURCE or --job JOB (--follow prints one JSON object a line)"},
		{[]string{"--follow", "--format", "table", "--after", "x"}, "--format goes with SOURCE or --job JOB"},
	} {
		code, out, errOut := run(t, env, append([]string{"changes"}, c.args...)...)
		require.Equal(t, 2, code, "%v: %s%s", c.args, out, errOut)
		require.Contains(t, errOut, "geoingest changes: "+c.want, c.args)
	}
}

// TestChangesTilesRefusesBadFlags: `changes --tiles` with --format geojson
// (it prints no geometries: it printed JSON as if asked for json), a
// --max-tiles under 1 or a --tile-buffer outside [0, 1] exits 2 naming
// the flag, before any database is opened; the last two exited 1.
func TestChangesTilesRefusesBadFlags(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "host=/nonexistent/geoingest dbname=none connect_timeout=1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "geojson"}, `--format "geojson": want table, csv or json with --tiles`},
		{[]string{"--max-tiles", "0"}, "--max-tiles 0: want at least 1"},
		{[]string{"--max-tiles", "-1"}, "--max-tiles -1: want at least 1"},
		{[]string{"--tile-buffer", "-1"}, "--tile-buffer -1: want a fraction of a tile in [0, 1]"},
		{[]string{"--tile-buffer", "NaN"}, "--tile-buffer NaN: want a fraction of a tile in [0, 1]"},
	} {
		args := append([]string{"changes", "--job", "0123456789ab", "--tiles"}, c.args...)
		code, out, errOut := run(t, env, args...)
		require.Equal(t, 2, code, "%v: %s%s", c.args, out, errOut)
		require.Contains(t, errOut, "geoingest changes: "+c.want, c.args)
	}
}

// TestChangesFollowRefusesBadFlags: `changes --follow` with a --poll of
// zero or less (it read the feed in a busy loop), a --webhook that is not
// an http(s) URL or a bad --expire-zoom (both exited 1, after the
// database was opened) exits 2 naming the flag, before any database is
// opened.
func TestChangesFollowRefusesBadFlags(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "host=/nonexistent/geoingest dbname=none connect_timeout=1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--poll", "0s"}, "--poll 0s: want a positive duration"},
		{[]string{"--poll", "-1s"}, "--poll -1s: want a positive duration"},
		{[]string{"--webhook", "ftp://example.org/hook"}, `--webhook "ftp://example.org/hook": want an http:// or https:// URL`},
		{[]string{"--webhook", "http://127.0.0.1:9/hook", "--expire-zoom", "14-10"}, `--expire-zoom: zoom range "14-10": want MIN-MAX`},
	} {
		args := append([]string{"changes", "--follow"}, c.args...)
		code, out, errOut := run(t, env, args...)
		require.Equal(t, 2, code, "%v: %s%s", c.args, out, errOut)
		require.Contains(t, errOut, "geoingest changes: "+c.want, c.args)
	}
}

// TestBatchWebhookURLIsChecked: ingest and backfill refuse a --webhook
// (or GEOINGEST_WEBHOOK) that is not an http(s) URL with exit 2, before
// any database is opened; they exited 1 once it was.
func TestBatchWebhookURLIsChecked(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "host=/nonexistent/geoingest dbname=none connect_timeout=1"}
	for _, args := range [][]string{
		{"ingest", "--webhook", "ftp://example.org/hook", "parcels.geojson"},
		{"backfill", "--dir", t.TempDir(), "--webhook", "ftp://example.org/hook"},
	} {
		code, out, errOut := run(t, env, args...)
		require.Equal(t, 2, code, "%v: %s%s", args, out, errOut)
		require.Contains(t, errOut, "geoingest "+args[0]+`: --webhook "ftp://example.org/hook": want an http:// or https:// URL`, args)
	}
	env["GEOINGEST_WEBHOOK"] = "example.org/hook"
	code, out, errOut := run(t, env, "ingest", "parcels.geojson")
	require.Equal(t, 2, code, out+errOut)
	require.Contains(t, errOut, `geoingest ingest: --webhook "example.org/hook": want an http:// or https:// URL`)
}

// TestChangesAndHistorySayWhatIsMissing: `history` without --as-of and
// `changes` without a mode (or with two) exit 2 saying what they want,
// above the usage; they printed the usage alone.
func TestChangesAndHistorySayWhatIsMissing(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "host=/nonexistent/geoingest dbname=none connect_timeout=1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"history"}, "geoingest history: --as-of TIME is needed"},
		{[]string{"history", "county.geojson"}, "geoingest history: --as-of TIME is needed"},
		{[]string{"history", "a.geojson", "b.geojson", "--as-of", "1h"}, "geoingest history: one SOURCE at most, not 2"},
		{[]string{"changes"}, "geoingest changes: give a SOURCE, --job JOB or --follow"},
		{[]string{"changes", "county.geojson", "--job", "0123456789ab"}, "geoingest changes: give one of SOURCE, --job JOB and --follow"},
		{[]string{"changes", "a.geojson", "b.geojson"}, "geoingest changes: one SOURCE at most, not 2"},
	} {
		code, out, errOut := run(t, env, c.args...)
		require.Equal(t, 2, code, "%v: %s%s", c.args, out, errOut)
		require.Contains(t, errOut, c.want, c.args)
		require.Contains(t, errOut, "Usage: geoingest "+c.args[0], c.args)
	}
}

// TestGuardArgumentsAreUsageErrors: the arguments of the guards' commands
// that are wrong on their face (pending approve or reject without
// --reason, --force without --reason or --reason without --force, a
// threshold that is no fraction, a quarantine index that is no number)
// exit 2 with what is wrong, before any database is opened, as an unknown
// flag does; they exited 1, as a failure.
func TestGuardArgumentsAreUsageErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "x.geojson")
	require.NoError(t, os.WriteFile(file, []byte(`{"type":"FeatureCollection","features":[]}`), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pending", "approve", "0123456789ab"}, "geoingest pending: pending approve needs --reason TEXT"},
		{[]string{"pending", "reject", "0123456789ab", "--reason", " "}, "geoingest pending: pending reject needs --reason TEXT"},
		{[]string{"quarantine", "show", "0123456789ab", "abc"}, `geoingest quarantine: feature index "abc": want the feature's index`},
		{[]string{"ingest", "--force", file}, "geoingest ingest: force needs a reason (--reason TEXT)"},
		{[]string{"ingest", "--reason", "x", file}, "geoingest ingest: --reason goes with --force"},
		{[]string{"ingest", "--guard-shrink", "2", file}, `geoingest ingest: --guard-shrink "2": want a fraction in (0, 1] or off`},
		{[]string{"backfill", "--dir", t.TempDir(), "--force"}, "geoingest backfill: force needs a reason (--reason TEXT)"},
		{[]string{"backfill", "--dir", t.TempDir(), "--guard-extent", "abc"}, `geoingest backfill: --guard-extent "abc": want a fraction`},
	} {
		code, out, errOut := run(t, map[string]string{}, c.args...)
		require.Equal(t, 2, code, "%v: %s%s", c.args, out, errOut)
		require.Contains(t, errOut, c.want, c.args)
	}
}

// TestJobParameterErrorsAreUsageErrors: a job parameter flag that the job
// cannot take (a --mapping the --schema file has not, or with no --schema;
// a mapping of another target; a policy that is none) exits 2 naming it,
// as a bad --match-iou does, in ingest, backfill, inspect and replay; they
// exited 1, as a failure of the job.
func TestJobParameterErrorsAreUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(typedSchema), 0o644))
	file := filepath.Join(dir, "x.geojson")
	require.NoError(t, os.WriteFile(file, []byte(`{"type":"FeatureCollection","features":[]}`), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ingest", "--schema", schema, "--mapping", "no-such", file}, `geoingest ingest: mapping "no-such": not a mapping of schema`},
		{[]string{"ingest", "--mapping", "county-06037", file}, `geoingest ingest: mapping "county-06037": no schema file`},
		{[]string{"ingest", "--schema", schema, "--mapping", "county-06037", "--target", "admin_units", file}, "maps to parcels, not to the job's target admin_units"},
		{[]string{"ingest", "--invalid", "bogus", file}, `geoingest ingest: invalid-geometry policy "bogus": want repair or fail`},
		{[]string{"backfill", "--dir", dir, "--schema", schema, "--mapping", "no-such"}, `geoingest backfill: mapping "no-such": not a mapping of schema`},
		{[]string{"inspect", "--schema", schema, "--mapping", "no-such", file}, `geoingest inspect: mapping "no-such": not a mapping of schema`},
		{[]string{"replay", "--null-geometry", "drop", file}, `geoingest replay: null-geometry policy "drop": want skip or fail`},
	} {
		code, out, errOut := run(t, map[string]string{}, c.args...)
		require.Equal(t, 2, code, "%v: %s%s", c.args, out, errOut)
		require.Contains(t, errOut, c.want, c.args)
	}
}
