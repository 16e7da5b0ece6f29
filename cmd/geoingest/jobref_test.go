package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestJobIDPrefix: the 12 characters of a job id that `jobs list` and
// the changes table print name the job in every command that takes one;
// a prefix that starts two jobs' ids is refused with both ids, and so is
// one shorter than 8 characters; an unknown prefix is "no such job" as
// an unknown id always was.
func TestJobIDPrefix(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}
	path := filepath.Join(t.TempDir(), "parcels.geojson")
	require.NoError(t, os.WriteFile(path, []byte(quarantineFile), 0o644))
	code, out, errOut := run(t, env, "ingest", "--json", "--no-guards", path)
	require.Equal(t, 0, code, out+errOut)
	job := parseLines(t, out)[0].JobID
	require.Len(t, job, 64)
	short := job[:12]

	code, out, errOut = run(t, env, "jobs", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, short+" ")
	require.NotContains(t, out, job, "the table prints the short id")

	code, out, errOut = run(t, env, "jobs", "show", short)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^job +`+job+`$`, out)
	code, out, errOut = run(t, env, "jobs", "--format", "json", "show", job[:8])
	require.Equal(t, 0, code, errOut)
	var shown struct {
		JobID string `json:"job_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown), out)
	require.Equal(t, job, shown.JobID)

	code, out, errOut = run(t, env, "changes", "--job", short, "--format", "json")
	require.Equal(t, 0, code, errOut)
	var changed struct {
		Job    string           `json:"job"`
		Counts map[string]int64 `json:"counts"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &changed), out)
	require.Equal(t, job, changed.Job)
	require.EqualValues(t, 3, changed.Counts["added"])

	code, out, errOut = run(t, env, "quarantine", "list", short)
	require.Equal(t, 0, code, errOut)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 5, out)
	code, out, errOut = run(t, env, "quarantine", "show", short, "6")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"0007"`)
	code, out, errOut = run(t, env, "quarantine", "export", short)
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasPrefix(out, "index,layer,rule,reason,APN,owner,geometry\n"), out)
	require.Contains(t, out, "0004")
	// pending show names the job it resolved when it has no guard decisions.
	code, _, errOut = run(t, env, "pending", "show", short)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "job "+job+": no guard decisions recorded")

	// Too short: fewer than 8 characters of an id are no job, as they
	// always were, with a note that says why.
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"jobs", "show", job[:7]}, "no such job"},
		{[]string{"quarantine", "list", job[:4]}, "no such job"},
		{[]string{"changes", "--job", job[:7]}, "no change record"},
	} {
		code, out, errOut = run(t, env, tc.args...)
		require.Equal(t, 1, code, "%v: %s%s", tc.args, out, errOut)
		require.Contains(t, errOut, tc.err, tc.args)
		require.Contains(t, errOut, "too short to stand for one: give at least 8 characters", tc.args)
	}

	// Ambiguous: a second job (a claim) whose id shares the first 12
	// characters. The 12 are refused, listing both ids; 13 name each.
	other := short + strings.Repeat("0", 52)
	if other == job {
		other = short + strings.Repeat("1", 52)
	}
	execSQL(t, url, `INSERT INTO claims (job_id, state, owner, lease_until, source_bucket, source_key)
		VALUES ($1, 'FAILED', 'test', now(), 'file', '/nowhere.geojson')`, other)
	for _, args := range [][]string{{"jobs", "show", short}, {"quarantine", "list", short}, {"pending", "show", short}, {"changes", "--job", short}} {
		code, out, errOut = run(t, env, args...)
		require.Equal(t, 2, code, "%v: %s%s", args, out, errOut)
		require.Contains(t, errOut, "job id prefix "+short+" is ambiguous", args)
		require.Contains(t, errOut, job, args)
		require.Contains(t, errOut, other, args)
	}
	code, out, errOut = run(t, env, "jobs", "show", job[:13])
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^job +`+job+`$`, out)
	code, out, errOut = run(t, env, "jobs", "show", other[:13])
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^job +`+other+`$`, out)
	// Full ids work as they always did.
	code, out, errOut = run(t, env, "jobs", "show", job)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^job +`+job+`$`, out)

	// Unknown: as an unknown full id, "no such job".
	unknown := "f" + job[1:12]
	if job[0] == 'f' {
		unknown = "0" + job[1:12]
	}
	code, _, errOut = run(t, env, "jobs", "show", unknown)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no such job")
	code, _, errOut = run(t, env, "quarantine", "list", unknown)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no such job")
}
