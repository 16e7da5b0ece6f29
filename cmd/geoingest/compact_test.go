package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/pgtest"
	"github.com/geoingest/geoingest/internal/testfiles"
	"github.com/geoingest/geoingest/internal/testhook"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// writeLargeGeoJSON writes n parcels at column x, padded so that the file
// is over the write gate's 8 MiB own-partition threshold.
func writeLargeGeoJSON(t *testing.T, path string, x, n int) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	pad := strings.Repeat("p", 400)
	fmt.Fprint(w, `{"type":"FeatureCollection","features":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			fmt.Fprint(w, ",")
		}
		lon, lat := 2+float64(x)*0.1+float64(i%150)*0.0003, 48+float64(i/150)*0.0003
		fmt.Fprintf(w, `{"type":"Feature","properties":{"i":%d,"pad":%q},"geometry":{"type":"Polygon","coordinates":[[[%f,%f],[%f,%f],[%f,%f],[%f,%f]]]}}`,
			i, pad, lon, lat, lon+0.0002, lat, lon+0.0002, lat+0.0002, lon, lat)
	}
	fmt.Fprint(w, `]}`)
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, st.Size(), int64(8<<20))
}

// compactRig is a database holding two generations of 21,000 parcels,
// each in a partition of its own, written by `geoingest ingest`.
func compactRig(t *testing.T) (db string, env map[string]string) {
	t.Helper()
	db = pgtest.NewDB(t)
	env = map[string]string{"DATABASE_URL": db, "GEOINGEST_HOME": t.TempDir()}
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		p := filepath.Join(dir, fmt.Sprintf("county%d.geojson", i))
		writeLargeGeoJSON(t, p, i, 21000)
		code, out, errOut := run(t, env, "ingest", "--target", "parcels", p)
		require.Equal(t, 0, code, out+errOut)
	}
	require.EqualValues(t, 2, queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_ref > 0 AND status = 'current'`))
	return db, env
}

// ledgerState is what no fold, finished or not, may change.
func ledgerState(t *testing.T, db string) string {
	t.Helper()
	var s string
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.NoError(t, conn.QueryRow(context.Background(), `
		SELECT string_agg(job_id || ' ' || status || ' ' || feature_count || ' ' || total_area_m2 || ' ' || features_checksum, E'\n' ORDER BY job_id)
		FROM jobs`).Scan(&s))
	return s
}

// requireOnceAndClean: every parcel once, and verify clean.
func requireOnceAndClean(t *testing.T, db string, env map[string]string) {
	t.Helper()
	require.EqualValues(t, 42000, queryInt(t, db, `SELECT count(*) FROM parcels`))
	require.EqualValues(t, 42000, queryInt(t, db, `SELECT count(*) FROM geoingest_current_parcels`))
	code, out, errOut := run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
}

// TestCompactKilledMidFold: `geoingest compact` is SIGKILLed, and then
// the database cuts its session, at the point where a fold has copied the
// rows, re-pointed the ledger row and emptied the own partition but not
// committed: nothing is lost or doubled, the ledger is unchanged, verify
// is clean; the next run folds both generations.
func TestCompactKilledMidFold(t *testing.T) {
	t.Parallel()
	db, env := compactRig(t)
	before := ledgerState(t, db)
	requireOnceAndClean(t, db, env)

	compact := func(extra ...string) (*exec.Cmd, *testfiles.SyncBuffer) {
		cmd := exec.Command(binary, "compact", "--keep", "0", "--database-url", db, "--log-level", "info")
		cmd.Env = append(os.Environ(), append([]string{"GEOINGEST_HOME=" + env["GEOINGEST_HOME"]}, extra...)...)
		var out testfiles.SyncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		return cmd, &out
	}

	// SIGKILL before the fold's COMMIT.
	cmd, out := compact("GEOINGEST_TEST_CRASH_AT=" + testhook.BeforeFoldCommit)
	err := cmd.Run()
	require.Error(t, err, out.String())
	require.Contains(t, err.Error(), "killed", out.String())
	require.Equal(t, before, ledgerState(t, db))
	require.EqualValues(t, 2, queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_ref > 0 AND status = 'current'`))
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM geoingest_folded`))
	requireOnceAndClean(t, db, env)

	// The database goes away (every session cut) while a fold waits to
	// commit.
	marker := filepath.Join(t.TempDir(), "paused")
	cmd, out = compact("GEOINGEST_TEST_PAUSE_AT="+testhook.BeforeFoldCommit, "GEOINGEST_TEST_MARKER="+marker)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	require.Eventually(t, func() bool { _, err := os.Stat(marker); return err == nil }, time.Minute, 50*time.Millisecond, out.String())
	require.NoError(t, pgtest.Outage(context.Background(), t, db, 500*time.Millisecond))
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	require.Equal(t, before, ledgerState(t, db))
	requireOnceAndClean(t, db, env)

	// A run to the end folds both.
	code, stdout, errOut := run(t, env, "compact", "--keep", "0")
	require.Equal(t, 0, code, stdout+errOut)
	require.Contains(t, stdout, "2 jobs folded (42000 rows), 2 emptied partitions dropped, 0 waiting")
	require.Equal(t, before, ledgerState(t, db))
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_ref > 0`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'parcels'::regclass`))
	requireOnceAndClean(t, db, env)
}

// ogrLayers lists the layers GDAL's PostgreSQL driver shows for the
// database at conn (a keyword connection string), as QGIS and ogr2ogr
// meet them: `ogrinfo -ro -so PG:...`.
func ogrLayers(t *testing.T, conn string) []string {
	t.Helper()
	out, err := exec.Command("ogrinfo", "-ro", "-so", "PG:"+conn).CombinedOutput()
	require.NoError(t, err, string(out))
	var layers []string
	for _, line := range strings.Split(string(out), "\n") {
		// "1: parcels_shared (Multi Polygon)"
		if i := strings.Index(line, ": "); i > 0 && !strings.HasPrefix(line, "INFO") {
			name, _, _ := strings.Cut(line[i+2:], " (")
			layers = append(layers, name)
		}
	}
	return layers
}

// TestCompactRolesAndWhatClientsList: the writer compacts and the analyst
// may not; before compaction GDAL's PostgreSQL driver lists a layer per
// own partition (as the owner and as the analyst), after it none, and the
// current views, which are what an analyst should open, are listed
// throughout; verify as the analyst is clean after.
func TestCompactRolesAndWhatClientsList(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("ogrinfo"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ogrinfo not found: GDAL (Debian: gdal-bin) is this test's client; scripts/setup.sh --test installs it")
		}
		t.Skip("ogrinfo not found: install GDAL (Debian: apt-get install gdal-bin, or scripts/setup.sh --test) to run this test")
	}
	d := setupLeastPrivilege(t)
	asWriter := map[string]string{"DATABASE_URL": d.writer, "GEOINGEST_OWN_PARTITION_BYTES": "1"}
	asAnalyst := map[string]string{"DATABASE_URL": d.analyst}
	dir := t.TempDir()
	for i, src := range []string{epinay, synthParcels, "../../testdata/corpus/montreal_landuse_overpass/export.geojson"} {
		p := filepath.Join(dir, fmt.Sprintf("parcels-%d.geojson", i))
		copyWithMtime(t, src, p, time.Now())
		code, out, errOut := run(t, asWriter, "ingest", p)
		require.Equal(t, 0, code, out+errOut)
	}
	admin := filepath.Join(dir, "admin.geojson")
	copyWithMtime(t, synthAdmin, admin, time.Now())
	code, out, errOut := run(t, asWriter, "ingest", "--target", "admin_units", admin)
	require.Equal(t, 0, code, out+errOut)

	jobLayers := func(layers []string) (n int) {
		for _, l := range layers {
			if strings.Contains(l, "_job_") {
				n++
			}
		}
		return n
	}
	for _, conn := range []string{d.owner, d.analyst} {
		layers := ogrLayers(t, conn)
		t.Logf("before compaction: %v", layers)
		require.Equal(t, 4, jobLayers(layers), "a layer per own partition")
		require.Subset(t, layers, []string{"geoingest_current_parcels", "geoingest_current_admin_units"})
	}

	code, out, errOut = run(t, asAnalyst, "compact", "--keep", "0")
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "permission denied")
	require.EqualValues(t, 4, queryInt(t, d.owner, `SELECT count(*) FROM jobs WHERE job_ref > 0`))

	code, out, errOut = run(t, map[string]string{"DATABASE_URL": d.writer}, "compact", "--keep", "0")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "4 jobs folded")
	for _, conn := range []string{d.owner, d.analyst} {
		layers := ogrLayers(t, conn)
		t.Logf("after compaction: %v", layers)
		require.Zero(t, jobLayers(layers))
		require.Subset(t, layers, []string{"geoingest_current_parcels", "geoingest_current_admin_units"})
	}
	code, out, errOut = run(t, asAnalyst, "verify")
	require.Equal(t, 0, code, out+errOut)
}
