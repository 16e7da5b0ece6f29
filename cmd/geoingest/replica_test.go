package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/geoingest/geoingest/postgistest/hatest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestReadsOnAReplica: with --read-database-url (or
// GEOINGEST_READ_DATABASE_URL) on a streaming replica (an asynchronous
// standby of a pg_auto_failover formation), `report area`, `jobs list` and
// the console read the replica, not the primary: while the replica's
// replay is paused, a job committed on the primary is missing from what
// they show, the console shows the replica behind, and once replay
// resumes they show it. The report refresh, a write, still goes to the
// primary (--database-url).
func TestReadsOnAReplica(t *testing.T) {
	t.Parallel()
	hc := hatest.Shared(t, hatest.Options{Async: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	primary, replica := hc.URL(), hc.ReadURL()
	env := map[string]string{"DATABASE_URL": primary}
	code, out, errOut := run(t, env, "ingest", squaresFile(t, 7))
	require.Equal(t, 0, code, out+errOut)
	parcels := func(env map[string]string, args ...string) int64 {
		t.Helper()
		code, out, errOut := run(t, env, append([]string{"report", "area", "--format", "json"}, args...)...)
		require.Equal(t, 0, code, out+errOut)
		var r struct {
			Total struct {
				Parcels int64 `json:"parcels"`
			} `json:"total"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
		return r.Total.Parcels
	}
	eventually(t, 60*time.Second, "the replica has the first job", func() bool {
		return parcels(env, "--read-database-url", replica) == 7
	})

	// Pause the replica's replay, then commit a second job on the primary.
	rc, err := pgx.Connect(ctx, replica)
	require.NoError(t, err)
	defer rc.Close(ctx)
	_, err = rc.Exec(ctx, "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	code, out, errOut = run(t, env, "ingest", squaresFile(t, 5))
	require.Equal(t, 0, code, out+errOut)
	require.EqualValues(t, 12, parcels(env), "the primary has both jobs")
	require.EqualValues(t, 7, parcels(env, "--read-database-url", replica), "the report read the paused replica")
	require.EqualValues(t, 7, parcels(map[string]string{"DATABASE_URL": primary, "GEOINGEST_READ_DATABASE_URL": replica}),
		"the environment variable does the same")
	code, out, errOut = run(t, env, "jobs", "list", "--read-database-url", replica)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "sq7.geojson")
	require.NotContains(t, out, "sq5.geojson", "the listing read the paused replica")

	// The console on the replica shows it behind.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(binary, "console", "--database-url", primary, "--read-database-url", replica, "--addr", addr)
	cmd.Stderr = &testfiles.SyncBuffer{}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	get := func(path string) string {
		t.Helper()
		var body []byte
		eventually(t, 30*time.Second, "the console answers", func() bool {
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			body, _ = io.ReadAll(resp.Body)
			return resp.StatusCode == http.StatusOK
		})
		return string(body)
	}
	var ov struct {
		Jobs    int64 `json:"jobs"`
		Replica *struct {
			Standby         bool    `json:"standby"`
			LagSeconds      float64 `json:"lag_seconds"`
			UnreplayedBytes int64   `json:"unreplayed_bytes"`
		} `json:"replica"`
	}
	require.NoError(t, json.Unmarshal([]byte(get("/api/overview")), &ov))
	require.NotNil(t, ov.Replica, "the console reads a replica and says so")
	require.True(t, ov.Replica.Standby)
	require.Positive(t, ov.Replica.UnreplayedBytes, "the paused replica has WAL to replay")
	require.Positive(t, ov.Replica.LagSeconds)
	page := get("/")
	require.Contains(t, page, "read replica lag")
	t.Logf("replica behind by %.1f s, %d bytes", ov.Replica.LagSeconds, ov.Replica.UnreplayedBytes)

	_, err = rc.Exec(ctx, "SELECT pg_wal_replay_resume()")
	require.NoError(t, err)
	eventually(t, 60*time.Second, "the replica caught up", func() bool {
		return parcels(env, "--read-database-url", replica) == 12
	})
	eventually(t, 30*time.Second, "the console to show the replica caught up", func() bool {
		require.NoError(t, json.Unmarshal([]byte(get("/api/overview")), &ov))
		return ov.Replica.LagSeconds < 1
	})
}
