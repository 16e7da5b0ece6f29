package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testpar"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/postgistest/hatest"
	"github.com/stretchr/testify/require"
)

// binary is the geoingest binary built once for tests that need separate
// processes.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "geoingest-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "geoingest")
	// The test build honours internal/testhook's fault-injection variables.
	// Without a symbol table or DWARF (-s -w, as go test links its own
	// binaries): no test reads them, and the link takes about half the CPU
	// (7.4 s against 4.0 s).
	out, err := exec.Command("go", "build", "-tags", "geoingest_testhooks", "-ldflags=-s -w", "-o", binary, ".").CombinedOutput()
	if err != nil {
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	// Most tests wait (serve's leases and visibility timeouts, child
	// processes, failovers) rather than compute: the package uses about
	// 0.8 of a core at -parallel 2, so four at once.
	testpar.Default(4)
	pgtest.Main(m, testsrv.Stop, hatest.StopShared, func() { os.RemoveAll(dir) })
}

// with returns a copy of env with the pairs kv (key, value, ...) set.
func with(env map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(env)+len(kv)/2)
	for k, v := range env {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// run drives Main in-process and returns the exit status, stdout and stderr.
func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	m := NewMain()
	m.Stdout, m.Stderr = &stdout, &stderr
	m.Getenv = func(k string) string { return env[k] }
	code := m.Run(context.Background(), args)
	return code, stdout.String(), stderr.String()
}

func TestKeyReproducesVectors(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../testdata/jobkey_vectors.json")
	require.NoError(t, err)
	var vs []struct {
		Name         string          `json:"name"`
		Bucket       string          `json:"bucket"`
		RawKey       string          `json:"raw_key"`
		VersionToken string          `json:"version_token"`
		Params       json.RawMessage `json:"params"`
		JobKey       string          `json:"job_key"`
	}
	require.NoError(t, json.Unmarshal(data, &vs))
	require.NotEmpty(t, vs)
	for _, v := range vs {
		code, out, errOut := run(t, nil, "key", "--bucket", v.Bucket, "--key", v.RawKey, "--version", v.VersionToken, "--params", string(v.Params))
		require.Equal(t, 0, code, errOut)
		require.Equal(t, v.JobKey+"\n", out, v.Name)
	}
}

func TestKeyUsage(t *testing.T) {
	t.Parallel()
	code, _, errOut := run(t, nil, "key", "--bucket", "b")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "Usage: geoingest key")
	code, _, errOut = run(t, nil, "key", "--bucket", "b", "--key", "k", "--version", "v", "--params", "[1]")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "params")
}

type line struct {
	JobID    string  `json:"job_id"`
	Source   string  `json:"source"`
	Outcome  string  `json:"outcome"`
	Features int64   `json:"features"`
	AreaM2   float64 `json:"area_m2"`
	Error    string  `json:"error"`
	Changes  *struct {
		Base   string           `json:"base_job"`
		Counts map[string]int64 `json:"counts"`
	} `json:"changes"`
}

func parseLines(t *testing.T, out string) []line {
	t.Helper()
	var ls []line
	for _, s := range strings.Split(strings.TrimSpace(out), "\n") {
		var l line
		require.NoError(t, json.Unmarshal([]byte(s), &l), s)
		ls = append(ls, l)
	}
	return ls
}
