package main

import (
	"encoding/json"
	"net/http"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// heldSquares loads 20 squares as a source's first version, then 2 as its
// next: the shrink guard holds that one (exit 4). It returns the
// environment, the database, the file and the two job ids.
func heldSquares(t *testing.T) (env map[string]string, db, path, written, held string) {
	t.Helper()
	db = pgtest.NewDB(t)
	env = map[string]string{"DATABASE_URL": db, "GEOINGEST_HOME": t.TempDir()}
	path = filepath.Join(t.TempDir(), "county.geojson")
	writeSquareSource(t, path, 0, 20)
	code, out, errOut := run(t, env, "ingest", "--json", path)
	require.Equal(t, 0, code, out+errOut)
	written = parseLines(t, out)[0].JobID
	writeSquareSource(t, path, 0, 2)
	code, out, errOut = run(t, env, "ingest", "--json", path)
	require.Equal(t, exitPending, code, out+errOut)
	l := parseLines(t, out)[0]
	require.Equal(t, "pending", l.Outcome)
	return env, db, path, written, l.JobID
}

// TestPendingApproveOfASupersededVersionIsRefused: a pending version that
// a newer version of its source superseded meanwhile does not become
// current when approved; `pending approve` says so and exits 1 (as a
// refused decision does), in the table and in JSON, and nothing changes.
// A rejection of it still exits 0: it is not applied, as asked.
func TestPendingApproveOfASupersededVersionIsRefused(t *testing.T) {
	t.Parallel()
	env, db, path, _, held := heldSquares(t)
	writeSquareSource(t, path, 0, 21) // a newer version, which passes
	code, out, errOut := run(t, env, "ingest", "--json", path)
	require.Equal(t, 0, code, out+errOut)
	newer := parseLines(t, out)[0].JobID
	require.Equal(t, "superseded", queryString(t, db, "SELECT status FROM jobs WHERE job_id = '"+held+"'"))

	code, out, errOut = run(t, env, "pending", "approve", held, "--reason", "late")
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, held+" was superseded already")
	require.Contains(t, errOut, "cannot be approved")
	code, out, errOut = run(t, env, "pending", "approve", held, "--reason", "late", "--format", "json")
	require.Equal(t, 1, code, out+errOut)
	var r struct {
		Action  string `json:"action"`
		Already bool   `json:"already"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Equal(t, "superseded", r.Action)
	require.True(t, r.Already)
	require.Equal(t, newer, queryString(t, db, `SELECT current_job_id FROM sources`), "nothing changed")

	// The API answers 409 Conflict, with the decision in the body.
	base := startConsole(t, env, "--console-operator-token", "op-token")
	req, err := http.NewRequest("POST", base+"/api/pending/"+held+"/approve", strings.NewReader(`{"reason":"late"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer op-token")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var api struct {
		Action string `json:"action"`
		Error  string `json:"error"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&api))
	res.Body.Close()
	require.Equal(t, http.StatusConflict, res.StatusCode, api.Error)
	require.Equal(t, "superseded", api.Action)
	require.Contains(t, api.Error, "cannot be approved")
	require.Equal(t, newer, queryString(t, db, `SELECT current_job_id FROM sources`), "nothing changed")

	code, out, errOut = run(t, env, "pending", "reject", held, "--reason", "late")
	require.Equal(t, 0, code, out+errOut)
	require.True(t, strings.Contains(out, "superseded already"), out)
}

// TestChangesAndPendingShowSayWhatTheJobIs: `changes --job` of a version
// held pending approval says that it is pending and how to see and
// approve it, not only "no change record"; `pending show` of an id that
// names no job says the job is unknown, not that it has no guard
// decisions (which it still says of a known job without any).
func TestChangesAndPendingShowSayWhatTheJobIs(t *testing.T) {
	t.Parallel()
	env, _, _, written, held := heldSquares(t)
	for _, args := range [][]string{{"changes", "--job", held}, {"changes", "--job", held[:12], "--tiles"}} {
		code, out, errOut := run(t, env, args...)
		require.Equal(t, 1, code, "%v: %s%s", args, out, errOut)
		require.Contains(t, errOut, "no change record", args)
		require.Contains(t, errOut, "pending approval", args)
		require.Contains(t, errOut, "geoingest pending show "+held[:12], args)
		require.Contains(t, errOut, "geoingest pending approve "+held[:12]+" --reason TEXT", args)
	}
	code, out, errOut := run(t, env, "changes", "--job", written[:12])
	require.Equal(t, 0, code, out+errOut)

	unknown := strings.Repeat("e", 64)
	code, out, errOut = run(t, env, "pending", "show", unknown)
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "job "+unknown+": no such job")
	require.NotContains(t, errOut, "no guard decisions")
	code, out, errOut = run(t, env, "pending", "show", unknown, "--format", "json")
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "no such job")
	code, out, errOut = run(t, env, "pending", "show", written)
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "job "+written+": no guard decisions recorded")
	// In JSON too (guards.md: "in either format"): it printed [] and exited 0.
	code, out, errOut = run(t, env, "pending", "show", written, "--format", "json")
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "job "+written+": no guard decisions recorded")
	require.Empty(t, out)
}

// TestPendingListPrintsShortIDs: `pending list` prints the 12 characters
// of a job id that the other tables print (a prefix of 8 or more stands
// for the job everywhere); --format json keeps the whole id.
//
// The table names the generation each was compared with (guards.md: "with
// the reason and the generation each was compared with"), as the JSON's
// current_job does; it printed no such column.
func TestPendingListPrintsShortIDs(t *testing.T) {
	t.Parallel()
	env, _, _, written, held := heldSquares(t)
	code, out, errOut := run(t, env, "pending", "list")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, held[:12]+"  ")
	require.NotContains(t, out, held)
	require.Contains(t, out, "COMPARED WITH")
	require.Contains(t, out, "  "+written[:12]+"  ")
	code, out, errOut = run(t, env, "pending", "show", held[:12])
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "held")
	code, out, errOut = run(t, env, "pending", "list", "--format", "json")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, `"job_id": "`+held+`"`)
}

// TestJSONOutputIsNotHTMLEscaped: what the CLI prints as JSON keeps a
// reason's "->" as it is (encoding/json's default writes "-\u003e"), in
// ingest --json's lines and in the indented JSON of pending list.
func TestJSONOutputIsNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	env, _, path, _, _ := heldSquares(t)
	writeSquareSource(t, path, 0, 1) // held too, superseding the other
	code, out, errOut := run(t, env, "ingest", "--json", path)
	require.Equal(t, exitPending, code, out+errOut)
	require.Contains(t, out, "(20 -> 1; threshold 20%)")
	require.NotContains(t, out, `\u003e`)
	code, out, errOut = run(t, env, "pending", "list", "--format", "json")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "(20 -> 1; threshold 20%)")
	require.NotContains(t, out, `\u003e`)
}

// TestForcedVersionRecordsWhoForcedIt: ingest --force --reason records its
// forced entry with the user who forced it ("cli:" and the operating-system
// user, or --actor), as pending approve records who approved; it recorded
// the worker's id ("host:pid:..."), so the audit trail did not say who.
func TestForcedVersionRecordsWhoForcedIt(t *testing.T) {
	t.Parallel()
	env, _, path, _, _ := heldSquares(t)
	writeSquareSource(t, path, 0, 3)
	code, out, errOut := run(t, env, "ingest", "--json", "--force", "--reason", "the county sold them", path)
	require.Equal(t, 0, code, out+errOut)
	forced := parseLines(t, out)[0].JobID
	u, err := user.Current()
	require.NoError(t, err)
	code, out, errOut = run(t, env, "pending", "show", forced, "--format", "json")
	require.Equal(t, 0, code, out+errOut)
	var evs []struct{ Action, Actor, Reason string }
	require.NoError(t, json.Unmarshal([]byte(out), &evs))
	require.Len(t, evs, 1, out)
	require.Equal(t, "forced", evs[0].Action)
	require.Equal(t, "cli:"+u.Username, evs[0].Actor)

	writeSquareSource(t, path, 0, 1)
	code, out, errOut = run(t, env, "ingest", "--json", "--force", "--reason", "again", "--actor", "alice", path)
	require.Equal(t, 0, code, out+errOut)
	forced = parseLines(t, out)[0].JobID
	code, out, errOut = run(t, env, "pending", "show", forced)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "forced  alice ")
}

// TestIngestSaysWhatAForcedVersionTripped: ingest --force, without --json,
// says on stderr what the guards found in the version it forced, as
// --json's reason does; it printed only "written", as for a version that
// tripped nothing.
func TestIngestSaysWhatAForcedVersionTripped(t *testing.T) {
	t.Parallel()
	env, _, path, _, _ := heldSquares(t)
	writeSquareSource(t, path, 0, 3)
	code, out, errOut := run(t, env, "ingest", "--force", "--reason", "the county sold them", path)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "written")
	require.Contains(t, errOut, "geoingest ingest: "+path+": forced (the county sold them): shrink: features down 85.0% (20 -> 3; threshold 20%)")
}

// TestApproveOfAVersionANewerHeldOneSupersededSaysSo: a pending version
// superseded by a newer version that was itself held (not applied) is
// refused when approved, and the message does not say a newer version was
// applied (none was: the current generation is the one before both); it
// points at pending show, which says by which job, and at that job.
func TestApproveOfAVersionANewerHeldOneSupersededSaysSo(t *testing.T) {
	t.Parallel()
	env, db, path, written, held := heldSquares(t)
	writeSquareSource(t, path, 0, 3) // newer, shrunk too: held, and supersedes held
	code, out, errOut := run(t, env, "ingest", "--json", path)
	require.Equal(t, exitPending, code, out+errOut)
	require.Equal(t, "pending", parseLines(t, out)[0].Outcome)
	require.Equal(t, written, queryString(t, db, `SELECT current_job_id FROM sources`))

	code, out, errOut = run(t, env, "pending", "approve", held, "--reason", "late")
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, held+" was superseded already")
	require.NotContains(t, errOut, "was applied")
	require.Contains(t, errOut, "geoingest pending show "+held[:12])
	require.Equal(t, written, queryString(t, db, `SELECT current_job_id FROM sources`), "nothing changed")
}
