package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/ingest/postgis"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// holdClaim takes the claim gate for the local file at path, with the
// parameters of a default "=parcels" route, as a worker "dead-worker" that
// will never finish: the claim stays held until lease ends.
func holdClaim(t *testing.T, db, path string, lease time.Duration) (ingest.Job, time.Time) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, db)
	require.NoError(t, err)
	defer pool.Close()
	rs, err := ingest.ParseRoutes([]string{"=parcels"})
	require.NoError(t, err)
	src, f, err := localfs.Source(path)
	require.NoError(t, err)
	job, err := ingest.NewJob(src, ingest.RouteParams(rs[0], ingest.DefaultPipelineVersion), f)
	require.NoError(t, err)
	st, err := postgis.NewStore(pool, nil, nil).Claim(ctx, job, "dead-worker", lease)
	require.NoError(t, err)
	require.Equal(t, ingest.ClaimWon, st.Result)
	return job, time.Now().Add(lease)
}

// TestServeInboxHeldClaim: a file whose claim is held by a worker that
// died is not forgotten by the inbox: serve gives it back until the lease
// ends, then takes the job over and writes it; --until-idle waits for it.
func TestServeInboxHeldClaim(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "county.geojson")
	b, err := os.ReadFile(squaresFile(t, 7))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	// A lease that outlasts serve's start on a loaded machine (a 4 s one
	// had ended before serve first saw the file).
	job, until := holdClaim(t, db, p, 15*time.Second)

	code, out, errOut := run(t, map[string]string{"DATABASE_URL": db}, "serve", "--inbox", dir, "--metrics-addr", "",
		"--poll", "100ms", "--settle", "300ms", "--until-idle", "1s", "--log-level", "info")
	require.Equal(t, 0, code, errOut)
	require.False(t, time.Now().Before(until), "serve wrote the job only after the dead worker's lease ended")
	require.Contains(t, errOut, "claim held by another worker")
	require.Contains(t, errOut, "holder=dead-worker")
	require.Contains(t, out, "1 written")
	require.Regexp(t, `[1-9]\d* held elsewhere`, out)
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_id = $1 AND status = 'current'`, job.ID))
	require.EqualValues(t, 7, queryInt(t, db, `SELECT count(*) FROM parcels`))
}

// TestIngestAndBackfillHeldClaim: `geoingest ingest` and `geoingest
// backfill` report a job whose claim is held elsewhere as in progress
// elsewhere, not done: exit 1 with a message naming the holder; once the
// lease has ended, a re-run writes it.
func TestIngestAndBackfillHeldClaim(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	dir := t.TempDir()
	p := filepath.Join(dir, "county.geojson")
	b, err := os.ReadFile(squaresFile(t, 5))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	// A lease no run of the three below outlasts, however loaded the
	// machine (a 5 s one ended before the backfill ran); the test ends
	// it itself afterwards, as its running out would.
	job, _ := holdClaim(t, db, p, 10*time.Minute)

	code, out, errOut := run(t, env, "ingest", p)
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, out, "held")
	require.Contains(t, errOut, "in progress elsewhere: the claim is held by dead-worker until")

	code, out, errOut = run(t, env, "ingest", "--json", p)
	require.Equal(t, 1, code, out+errOut)
	l := parseLines(t, out)[0]
	require.Equal(t, "held", l.Outcome)
	require.Contains(t, l.Error, "in progress elsewhere")

	code, out, errOut = run(t, env, "backfill", "--dir", dir)
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, out, "1 listed, 0 filtered, 0 written, 0 pending, 0 already present, 0 superseded, 0 failed, 1 in progress elsewhere")
	require.Contains(t, errOut, "1 jobs in progress elsewhere")
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM jobs`))

	// The dead worker's lease runs out.
	require.EqualValues(t, 1, queryInt(t, db, `WITH e AS (UPDATE claims SET lease_until = now() - interval '1 second'
		WHERE job_id = $1 AND owner = 'dead-worker' RETURNING 1) SELECT count(*) FROM e`, job.ID))
	code, out, errOut = run(t, env, "backfill", "--dir", dir)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "1 written")
	code, out, errOut = run(t, env, "ingest", p)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "already-present")
}
