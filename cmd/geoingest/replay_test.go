package main

import (
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

func TestReplayCommand(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}

	// A file never ingested: replay delivers it, then again.
	code, out, errOut := run(t, env, "replay", bristolMSOA)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "first delivery: written")
	require.Contains(t, out, "unchanged: replay was already-present")
	job := jobOf(t, url, "parcels")

	// The same, by job id.
	code, out, errOut = run(t, env, "replay", "--job", job)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	require.Contains(t, out, job+"  file://")
	require.Contains(t, out, "unchanged")

	// Tamper with the source's features: replay must notice.
	execSQL(t, url, `UPDATE parcels SET geom = ST_Multi(ST_Buffer(geom, 0.0005)) WHERE job_ref = geoingest_job_ref($1) AND feature_index = 1`, job)
	code, out, _ = run(t, env, "replay", "--job", job)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "CHANGED")
	require.Contains(t, out, "ledger records")

	code, out, _ = run(t, env, "replay", bristolMSOA)
	require.Equal(t, 1, code, out)

	code, _, _ = run(t, env, "replay")
	require.Equal(t, 2, code)
	code, _, _ = run(t, env, "replay", "--job", job, bristolMSOA)
	require.Equal(t, 2, code)
	code, out, errOut = run(t, env, "replay", "--job", "ab")
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, "not in the ledger")
}
