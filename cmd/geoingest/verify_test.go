package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func execSQL(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

// jobOf returns the job id of the only job of a target table.
func jobOf(t *testing.T, url, target string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var id string
	require.NoError(t, conn.QueryRow(context.Background(),
		`SELECT job_id FROM jobs WHERE target_table = $1`, target).Scan(&id))
	return id
}

func TestVerifyCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, tamper string }{
		{"row inserted", `INSERT INTO parcels (job_ref, feature_index, properties, geom)
			SELECT job_ref, 1000, properties, geom FROM parcels WHERE job_ref = geoingest_job_ref($1) AND feature_index = 0`},
		{"row deleted", `DELETE FROM parcels WHERE job_ref = geoingest_job_ref($1) AND feature_index = 10`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.NewDB(t)
			env := map[string]string{"DATABASE_URL": url}
			// Every file is delivered twice.
			ingestInto(t, env, bristolMSOA, "parcels")
			ingestInto(t, env, bristolBound, "admin_units")
			code, out, errOut := run(t, env, "verify")
			require.Equal(t, 0, code, "%s\n%s", out, errOut)
			require.Contains(t, out, "checked 2 jobs (2 current), 2 sources, 2 claims, 72 parcels, 1 admin units")
			require.Contains(t, out, "ok")

			job := jobOf(t, url, "parcels")
			execSQL(t, url, tc.tamper, job)
			code, out, _ = run(t, env, "verify")
			require.Equal(t, 1, code, out)
			require.Contains(t, out, "FAILED")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Equal(t, job, lines[len(lines)-1], "the offending job is listed last:\n%s", out)
			require.Contains(t, out, job+"  feature count")
			require.NotContains(t, out, jobOf(t, url, "admin_units"))
		})
	}
}

// TestVerifySinceCommand: --since and --source take the incremental mode
// and say so; a bad --since is a usage error.
func TestVerifySinceCommand(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}
	ingestInto(t, env, bristolMSOA, "parcels")
	job := jobOf(t, url, "parcels")
	execSQL(t, url, `UPDATE parcels SET properties = properties || '{"edited": true}' WHERE job_ref = geoingest_job_ref($1) AND feature_index = 3`, job)

	code, out, errOut := run(t, env, "verify", "--since", "10m")
	require.Equal(t, 1, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "incremental: changed since ")
	require.Contains(t, out, job+"  checksum")

	code, out, errOut = run(t, env, "verify", "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	require.Contains(t, out, "checked 0 jobs")

	code, out, _ = run(t, env, "verify", "--source", "/no/such/prefix")
	require.Equal(t, 0, code, out)

	code, _, errOut = run(t, env, "verify", "--since", "yesterday")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "neither a duration")
}

// TestSinceTakesADate: the commands' --since and --as-of take a date
// (midnight UTC), as the console API's since and as_of do: verify
// --since a date before the job checks it, a date after it nothing;
// history --as-of a date after the job has its rows, before it none.
func TestSinceTakesADate(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}
	code, out, errOut := run(t, env, "ingest", squaresFile(t, 3))
	require.Equal(t, 0, code, out+errOut)

	code, out, errOut = run(t, env, "verify", "--since", "2000-01-01")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "incremental: changed since 2000-01-01T00:00:00Z")
	require.Contains(t, out, "checked 1 jobs (1 current)")

	tomorrow := time.Now().UTC().Add(24 * time.Hour).Format(time.DateOnly)
	code, out, errOut = run(t, env, "verify", "--since", tomorrow)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "checked 0 jobs")

	// history --as-of a date: tomorrow's rows are the job's three, those
	// of 2000 none.
	code, out, errOut = run(t, env, "history", "--as-of", tomorrow, "--format", "csv")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "sq3.geojson,")
	require.Contains(t, out, ",3,")
	code, out, errOut = run(t, env, "history", "--as-of", "2000-01-01", "--format", "csv")
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, "source,job,features,area_m2\n", out)
}
