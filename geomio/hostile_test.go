//go:build cgo && !geoingest_nogdal

package geomio

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/hostile/corpus"
	"github.com/stretchr/testify/require"
)

// TestHostileCorpus reads every hostile upload of internal/testsupport/hostile/corpus
// as a worker would, with credentials in its environment that would
// reach the listener: the listener on 127.0.0.1 that every URL names
// receives nothing, no feature and no error holds the secret beside
// them, each read ends within its deadline plus 5 s, and each case meant
// to fail fails with its reason.
func TestHostileCorpus(t *testing.T) {
	requireOGR2OGR(t)
	ln, err := corpus.Listen()
	require.NoError(t, err)
	defer ln.Close()
	env := corpus.Env{Addr: ln.Addr(), Outside: filepath.Join(t.TempDir(), "outside")}
	require.NoError(t, corpus.WriteOutside(env))
	// Were these given to GDAL, /vsis3/ would sign requests to the
	// listener with them.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAHOSTILETEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hostile-secret-key")
	t.Setenv("AWS_S3_ENDPOINT", ln.Addr())
	t.Setenv("AWS_HTTPS", "NO")
	t.Setenv("AWS_VIRTUAL_HOSTING", "FALSE")
	limits := Limits{ReadTimeout: 4 * time.Second, ReadCPU: 3 * time.Second}
	for _, c := range corpus.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "job")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			p, err := c.Write(dir, env)
			require.NoError(t, err)
			start := time.Now()
			fs, _, err := readOGR(t, p, Options{Limits: limits, TempDir: dir})
			took := time.Since(start)
			t.Logf("%s: %d features in %s, error: %v", c.Name, len(fs), took.Round(time.Millisecond), err)
			require.Less(t, took, limits.ReadTimeout+5*time.Second)
			for _, f := range fs {
				require.NotContains(t, string(f.Properties), corpus.Secret)
			}
			if err != nil {
				require.NotContains(t, err.Error(), corpus.Secret)
				require.NotContains(t, err.Error(), "hostile-secret-key")
				require.True(t, IsInputError(err), "a permanent failure of the upload: %v", err)
			}
			if c.Fails {
				require.Error(t, err)
				if c.Want != "" {
					require.Contains(t, err.Error(), c.Want)
				}
			}
		})
	}
	require.Empty(t, ln.Hits(), "connections to the address the files name")
}
