//go:build cgo && !geoingest_nogdal

package ogr

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/hostile/corpus"
	"github.com/stretchr/testify/require"
)

// readAll opens p in a child contained by c and reads its first layer.
func readAll(p string, drivers []string, c Contain) error {
	ds, err := Open(p, drivers, nil, c)
	if err != nil {
		return err
	}
	defer ds.Close()
	for i := 0; i < ds.LayerCount(); i++ {
		l := ds.Layer(i)
		if err := l.Start(0, false); err != nil {
			return err
		}
		for {
			ok, err := l.Next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
		}
	}
	return nil
}

func hostileFile(t *testing.T, name string) string {
	t.Helper()
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		t.Skip("ogr2ogr not found")
	}
	for _, c := range corpus.Cases() {
		if c.Name == name {
			p, err := c.Write(t.TempDir(), corpus.Env{Addr: "127.0.0.1:9", Outside: t.TempDir()})
			require.NoError(t, err)
			return p
		}
	}
	t.Fatalf("no case %s", name)
	return ""
}

// TestChildLimits: each limit stops a read that passes it, with an error
// naming the limit: the deadline, the CPU time, the memory, and the
// context (cancelled, its own error).
func TestChildLimits(t *testing.T) {
	if err := initGDAL(); err != nil {
		t.Skip(err)
	}
	spin := hostileFile(t, "gpkg-view-recursive-cte")
	blob := hostileFile(t, "gpkg-view-printf-blob")
	gpkg := []string{"GPKG"}
	limitOf := func(err error) string {
		var le *LimitError
		if errors.As(err, &le) {
			return le.Limit
		}
		return ""
	}

	start := time.Now()
	err := readAll(spin, gpkg, Contain{Read: []string{filepath.Dir(spin)}, Deadline: time.Now().Add(2 * time.Second), Timeout: 2 * time.Second})
	require.Equal(t, "read-timeout", limitOf(err), "%v", err)
	require.Less(t, time.Since(start), 7*time.Second, "the deadline plus 5 s")
	require.Contains(t, err.Error(), "the read took longer than 2s")

	err = readAll(spin, gpkg, Contain{Read: []string{filepath.Dir(spin)}, Deadline: time.Now().Add(time.Minute), Timeout: time.Minute, CPU: time.Second})
	require.Equal(t, "read-cpu", limitOf(err), "%v", err)

	err = readAll(blob, gpkg, Contain{Read: []string{filepath.Dir(blob)}, Deadline: time.Now().Add(5 * time.Minute), Timeout: 5 * time.Minute, Memory: 32 << 20})
	require.Equal(t, "read-memory", limitOf(err), "%v", err)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	err = readAll(spin, gpkg, Contain{Context: ctx, Read: []string{filepath.Dir(spin)}, Deadline: time.Now().Add(time.Minute), Timeout: time.Minute})
	require.ErrorIs(t, err, context.Canceled)
}

// TestChildSandboxDenies: the child reads nothing outside the folders it
// is given (Landlock), and connects nowhere, even to a path GDAL is
// handed directly (/vsicurl/ to a listener: seccomp).
func TestChildSandboxDenies(t *testing.T) {
	if err := initGDAL(); err != nil {
		t.Skip(err)
	}
	if landlockABI() == 0 {
		t.Skip("no Landlock in this kernel")
	}
	in, out := t.TempDir(), t.TempDir()
	p := filepath.Join(out, "a.csv")
	require.NoError(t, os.WriteFile(p, []byte("id,WKT\n1,\"POLYGON((0 0,1 0,1 1,0 0))\"\n"), 0o644))
	c := Contain{Read: []string{in}, Deadline: time.Now().Add(time.Minute), Timeout: time.Minute}
	require.Error(t, readAll(p, []string{"CSV"}, c), "a file outside the folders given")
	c.Read = []string{out}
	require.NoError(t, readAll(p, []string{"CSV"}, c), "the same file inside them")

	ln, err := corpus.Listen()
	require.NoError(t, err)
	defer ln.Close()
	for _, u := range []string{"/vsicurl/http://" + ln.Addr() + "/a.csv", "/vsicurl_streaming/http://" + ln.Addr() + "/a.csv"} {
		require.Error(t, readAll(u, []string{"CSV"}, c), u)
	}
	require.Empty(t, ln.Hits())
}
