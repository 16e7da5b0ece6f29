package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

const epinay = "../../testdata/corpus/epinay_cadastre_parcels/cadastre-91216-parcelles.json"

func counts(t *testing.T, url string) (jobs, parcels int64) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.NoError(t, conn.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM parcels)`).Scan(&jobs, &parcels))
	return jobs, parcels
}

func TestIngestCommandJSONAndDuplicate(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}
	code, out, errOut := run(t, env, "ingest", "--json", epinay)
	require.Equal(t, 0, code, errOut)
	ls := parseLines(t, out)
	require.Len(t, ls, 1)
	require.Equal(t, "written", ls[0].Outcome)
	require.EqualValues(t, 4241, ls[0].Features)
	require.InDelta(t, 3836490, ls[0].AreaM2, 1)
	require.Len(t, ls[0].JobID, 64)

	code, out, errOut = run(t, env, "ingest", "--json", epinay)
	require.Equal(t, 0, code, errOut)
	again := parseLines(t, out)
	require.Equal(t, "already-present", again[0].Outcome)
	require.Equal(t, ls[0].JobID, again[0].JobID)
	jobs, parcels := counts(t, url)
	require.EqualValues(t, 1, jobs)
	require.EqualValues(t, 4241, parcels)
}

func TestIngestMalformedExitsOne(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	bad := filepath.Join(t.TempDir(), "bad.geojson")
	require.NoError(t, os.WriteFile(bad, []byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]},"properties":{}},{"type":"Feat`), 0o644))
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": url}, "ingest", epinay, bad)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "file://"+bad)
	require.Contains(t, out, "written", "the good file is still ingested")
	require.Contains(t, out, "failed")
	_, parcels := counts(t, url)
	require.EqualValues(t, 4241, parcels)
}

// TestEightProcesses starts 8 geoingest processes on the same file at once.
func TestEightProcesses(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	const n = 8
	outs := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(binary, "ingest", "--json", epinay)
			cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
			out, err := cmd.Output()
			if ls := parseLines(t, string(out)); len(ls) == 1 && ls[0].Outcome == "held" {
				// In progress in another process: not done, exit 1.
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee)
				require.Equal(t, 1, ee.ExitCode())
				require.Contains(t, ls[0].Error, "in progress elsewhere")
			} else {
				require.NoError(t, err)
			}
			outs[i] = string(out)
		}(i)
	}
	wg.Wait()
	byOutcome := map[string]int{}
	for _, o := range outs {
		ls := parseLines(t, o)
		require.Len(t, ls, 1)
		byOutcome[ls[0].Outcome]++
	}
	require.Equal(t, 1, byOutcome["written"], "%v", byOutcome)
	require.Equal(t, n-1, byOutcome["already-present"]+byOutcome["held"], "%v", byOutcome)
	// Run again, a held one is a duplicate of the committed job.
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": url}, "ingest", "--json", epinay)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "already-present", parseLines(t, out)[0].Outcome)
	jobs, parcels := counts(t, url)
	require.EqualValues(t, 1, jobs)
	require.EqualValues(t, 4241, parcels)
}

// TestKilledBetweenCopyAndCommit kills a worker (SIGKILL) inside the
// write-gate transaction after COPY: nothing may remain, and once the lease
// expires the job runs cleanly.
func TestKilledBetweenCopyAndCommit(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	marker := filepath.Join(t.TempDir(), "paused")
	cmd := exec.Command(binary, "ingest", "--lease", "2s", "--json", epinay)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "GEOINGEST_TEST_PAUSE_AT=before-commit", "GEOINGEST_TEST_MARKER="+marker)
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "worker never reached the commit")
		time.Sleep(50 * time.Millisecond)
	}
	// The COPY has happened inside the open transaction.
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var inFlight int
	require.NoError(t, conn.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'geoingest' AND datname = current_database() AND state = 'idle in transaction'`).Scan(&inFlight))
	require.GreaterOrEqual(t, inFlight, 1)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	// The server notices the dead connection and rolls back.
	require.Eventually(t, func() bool {
		jobs, parcels := counts(t, url)
		var active int
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'geoingest' AND datname = current_database()`).Scan(&active)
		return jobs == 0 && parcels == 0 && active == 0
	}, 10*time.Second, 100*time.Millisecond)
	var state string
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT state FROM claims`).Scan(&state))
	require.Equal(t, "CLAIMED", state, "the dead worker's claim stays until its lease expires")

	time.Sleep(2500 * time.Millisecond) // the 2 s lease expires
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": url}, "ingest", "--json", epinay)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "written", parseLines(t, out)[0].Outcome)
	jobs, parcels := counts(t, url)
	require.EqualValues(t, 1, jobs)
	require.EqualValues(t, 4241, parcels)
}
