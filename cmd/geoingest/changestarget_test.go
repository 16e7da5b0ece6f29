package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestChangesOfASourceNameTheTarget: `changes SOURCE` lists the records
// of every target the source was ingested into; its table and CSV name
// each record's target, so that a file ingested into parcels and into
// admin_units does not read as one source's first version twice.
func TestChangesOfASourceNameTheTarget(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db, "GEOINGEST_HOME": t.TempDir()}
	path := filepath.Join(t.TempDir(), "county.geojson")
	writeSquareSource(t, path, 0, 3)
	for _, target := range []string{"parcels", "admin_units"} {
		code, out, errOut := run(t, env, "ingest", "--target", target, path)
		require.Equal(t, 0, code, out+errOut)
	}

	code, out, errOut := run(t, env, "changes", path)
	require.Equal(t, 0, code, out+errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Regexp(t, regexp.MustCompile(`^RECORDED\s+JOB\s+TARGET\s+ADDED`), lines[0])
	require.Regexp(t, regexp.MustCompile(`\s+parcels\s+3\s+0`), lines[1])
	require.Regexp(t, regexp.MustCompile(`\s+admin_units\s+3\s+0`), lines[2])

	code, out, errOut = run(t, env, "changes", path, "--format", "csv")
	require.Equal(t, 0, code, out+errOut)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.True(t, strings.HasSuffix(lines[0], ",target_table"), lines[0])
	require.True(t, strings.HasSuffix(lines[1], ",parcels"), lines[1])
	require.True(t, strings.HasSuffix(lines[2], ",admin_units"), lines[2])
}
