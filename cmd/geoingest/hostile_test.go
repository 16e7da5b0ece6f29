package main

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/geoingest/geoingest/internal/testsupport/hostile/corpus"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// plantedSecret is put in the worker's environment and in its database
// URL: no job's reason, log line or console output may show it.
const plantedSecret = "planted-Secret-7f3a"

func requireHostileTools(t *testing.T) {
	t.Helper()
	if !ogr.Available {
		t.Skip("this build has no GDAL")
	}
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ogr2ogr not found: scripts/setup.sh --test installs gdal-bin")
		}
		t.Skip("ogr2ogr not found")
	}
}

// stageUpload writes case c into a folder of its own and returns the
// upload to drop into an inbox: the file itself when it is alone, else a
// zip of the folder (a GML with its schema, a MapInfo table's parts).
func stageUpload(t *testing.T, c corpus.Case, env corpus.Env) (name string, body []byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "job")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p, err := c.Write(dir, env)
	require.NoError(t, err, c.Name)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	if len(ents) == 1 {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return c.Name + filepath.Ext(strings.TrimSuffix(p, ".gz")) + map[bool]string{true: ".gz"}[strings.HasSuffix(p, ".gz")], b
	}
	var buf strings.Builder
	zw := zip.NewWriter(&buf)
	for _, e := range ents {
		w, err := zw.Create(e.Name())
		require.NoError(t, err)
		f, err := os.Open(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		_, err = io.Copy(w, f)
		f.Close()
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return c.Name + ".zip", []byte(buf.String())
}

// TestServeHostileUploads: `serve` on an inbox where every hostile upload
// of the corpus is dropped between good ones keeps landing the good ones
// while each hostile one fails within its limits (or is read without
// following what it names); the listener every URL names receives
// nothing, no row holds the secret outside the uploads, no claim is left
// CLAIMED, and neither the failure reasons nor the log show the secret
// or the credentials planted in the worker's environment and database URL.
func TestServeHostileUploads(t *testing.T) {
	requireHostileTools(t)
	ln, err := corpus.Listen()
	require.NoError(t, err)
	defer ln.Close()
	env := corpus.Env{Addr: ln.Addr(), Outside: filepath.Join(t.TempDir(), "outside")}
	require.NoError(t, corpus.WriteOutside(env))
	t.Setenv("AWS_SECRET_ACCESS_KEY", plantedSecret)
	t.Setenv("AWS_S3_ENDPOINT", ln.Addr())
	t.Setenv("GEOINGEST_PLANTED", plantedSecret)

	db := pgtest.NewDB(t)
	// The test server trusts local connections: the password is carried,
	// never checked.
	dbWithSecret := strings.Replace(db, "password=''", "password='"+plantedSecret+"'", 1)
	if dbWithSecret == db {
		dbWithSecret = db + " password='" + plantedSecret + "'"
	}

	inbox := t.TempDir()
	srv := startServe(t, map[string]string{"GEOINGEST_PLANTED": plantedSecret},
		"--inbox", inbox, "--workers", "2", "--database-url", dbWithSecret, "--poll", "100ms", "--settle", "300ms",
		"--read-timeout", "5s", "--read-cpu", "3s")
	good := 0
	fails := map[string]bool{}
	for i, c := range corpus.Cases() {
		name, body := stageUpload(t, c, env)
		require.NoError(t, os.WriteFile(filepath.Join(inbox, name), body, 0o644))
		if c.Fails {
			fails[name] = true
		}
		g := fmt.Sprintf(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"n":%d},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}}]}`, i)
		require.NoError(t, os.WriteFile(filepath.Join(inbox, fmt.Sprintf("good-%02d.geojson", i)), []byte(g), 0o644))
		good++
	}
	total := good + len(corpus.Cases())
	eventually(t, 5*time.Minute, "every upload to be committed or failed", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM claims WHERE state IN ('COMMITTED', 'FAILED')`) == int64(total)
	})
	srv.stop(t)
	require.Contains(t, srv.stderr.String(), "GDAL reads uploads in a sandboxed child process", "the sandbox logged at start-up")
	if testing.Verbose() {
		t.Logf("claims:\n%s", dumpClaims(t, db))
	}

	require.EqualValues(t, good, queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'COMMITTED' AND source_key LIKE '%/good-%'`), "every good upload lands")
	for name := range fails {
		require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'FAILED' AND source_key = $1`, filepath.Join(inbox, name)), name)
	}
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'CLAIMED' AND lease_until > now()`))
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM parcels WHERE properties::text LIKE '%' || $1 || '%'`, corpus.Secret))
	for _, s := range []string{corpus.Secret, plantedSecret} {
		require.Zero(t, queryInt(t, db, `SELECT count(*) FROM claims WHERE last_error LIKE '%' || $1 || '%'`, s), "a reason shows %s", s)
		require.NotContains(t, srv.stderr.String(), s)
	}
	require.Empty(t, ln.Hits(), "connections to the address the files name")
}

// TestHostileReadStopsOnSIGTERM: `geoingest ingest` and `geoingest
// inspect` of a GeoPackage whose layer is a view that never ends (a
// recursive CTE), under the default limits, stop within seconds of a
// SIGTERM: the reading child is killed, and the claim is not left
// CLAIMED.
func TestHostileReadStopsOnSIGTERM(t *testing.T) {
	requireHostileTools(t)
	t.Parallel()
	var spin corpus.Case
	for _, c := range corpus.Cases() {
		if c.Name == "gpkg-view-recursive-cte" {
			spin = c
		}
	}
	dir := t.TempDir()
	p, err := spin.Write(dir, corpus.Env{Addr: "127.0.0.1:9", Outside: t.TempDir()})
	require.NoError(t, err)
	db := pgtest.NewDB(t)
	for _, args := range [][]string{{"ingest", "--database-url", db, p}, {"inspect", p}} {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "GEOINGEST_HOME="+t.TempDir())
		out := &testfiles.SyncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if args[0] == "ingest" {
			// The job is claimed (and so reading) before the signal, however
			// slowly a loaded machine starts the process.
			eventually(t, time.Minute, "ingest to claim the job", func() bool {
				return queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'CLAIMED'`) == 1
			})
		}
		time.Sleep(3 * time.Second) // reading: the child spins
		select {
		case <-exited:
			t.Fatalf("%s ended before the SIGTERM: %s", args[0], out.String())
		default:
		}
		start := time.Now()
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%s outlived a SIGTERM by 20 s: %s", args[0], out.String())
		}
		t.Logf("%s stopped %s after SIGTERM", args[0], time.Since(start).Round(time.Millisecond))
		require.NotContains(t, out.String(), "panic")
	}
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'CLAIMED' AND lease_until > now()`), "the claim is released (its lease ended) for the next delivery")
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims WHERE last_error LIKE '%interrupted%'`))
}

func dumpClaims(t *testing.T, db string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT source_key, state, coalesce(last_error, '') FROM claims ORDER BY source_key`)
	require.NoError(t, err)
	var b strings.Builder
	for rows.Next() {
		var k, st, e string
		require.NoError(t, rows.Scan(&k, &st, &e))
		fmt.Fprintf(&b, "%s %s %s\n", k, st, e)
	}
	return b.String()
}

// TestServeTakesTheNextJobAfterAHostileRead: with one worker, a
// GeoPackage whose view never ends fails at --read-timeout (20 s: a
// good GeoPackage's read, child start included, stays under it on a
// loaded CI machine), within it plus 10 s of its claim, and the worker then takes the next jobs at once
// (a GeoPackage, read by the spare child started when the hostile read's
// child was killed, and a GeoJSON), and lands them.
func TestServeTakesTheNextJobAfterAHostileRead(t *testing.T) {
	requireHostileTools(t)
	t.Parallel()
	var spin corpus.Case
	for _, c := range corpus.Cases() {
		if c.Name == "gpkg-view-recursive-cte" {
			spin = c
		}
	}
	src := t.TempDir()
	spinPath, err := spin.Write(src, corpus.Env{Addr: "127.0.0.1:9", Outside: t.TempDir()})
	require.NoError(t, err)
	poly := func(i int) string {
		return fmt.Sprintf(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"n":%d},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}}]}`, i)
	}
	gpkg := func(i int) []byte {
		in := filepath.Join(src, fmt.Sprintf("g%d.geojson", i))
		out := filepath.Join(src, fmt.Sprintf("g%d.gpkg", i))
		require.NoError(t, os.WriteFile(in, []byte(poly(i)), 0o644))
		b, err := exec.Command("ogr2ogr", "-f", "GPKG", "-a_srs", "EPSG:4326", out, in).CombinedOutput()
		require.NoError(t, err, "%s", b)
		body, err := os.ReadFile(out)
		require.NoError(t, err)
		return body
	}
	db := pgtest.NewDB(t)
	inbox := t.TempDir()
	srv := startServe(t, nil, "--inbox", inbox, "--workers", "1", "--database-url", db, "--poll", "100ms", "--settle", "300ms",
		"--read-timeout", "20s", "--read-cpu", "60s", "--reader-spares", "1")
	defer srv.stop(t)
	done := func(n int64) func() bool {
		return func() bool {
			return queryInt(t, db, `SELECT count(*) FROM claims WHERE state IN ('COMMITTED', 'FAILED')`) == n
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(inbox, "good-0.gpkg"), gpkg(0), 0o644))
	eventually(t, time.Minute, "the first GeoPackage", done(1))

	body, err := os.ReadFile(spinPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(inbox, "spin.gpkg"), body, 0o644))
	eventually(t, time.Minute, "the hostile upload's claim", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM claims WHERE source_key LIKE '%/spin.gpkg'`) == 1
	})
	require.NoError(t, os.WriteFile(filepath.Join(inbox, "good-1.gpkg"), gpkg(1), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(inbox, "good-2.geojson"), []byte(poly(2)), 0o644))
	eventually(t, 3*time.Minute, "every upload to be committed or failed", done(4))

	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims WHERE source_key LIKE '%/spin.gpkg' AND state = 'FAILED' AND last_error LIKE '%the read took longer than 20s%'`), dumpClaims(t, db))
	require.EqualValues(t, 3, queryInt(t, db, `SELECT count(*) FROM claims WHERE source_key LIKE '%/good-%' AND state = 'COMMITTED'`), dumpClaims(t, db))
	held := queryInt(t, db, `SELECT (extract(epoch FROM updated_at - created_at) * 1000)::bigint FROM claims WHERE source_key LIKE '%/spin.gpkg'`)
	next := queryInt(t, db, `SELECT (extract(epoch FROM (SELECT min(created_at) FROM claims WHERE source_key ~ '/good-[12]') - updated_at) * 1000)::bigint FROM claims WHERE source_key LIKE '%/spin.gpkg'`)
	t.Logf("the hostile job held the worker %d ms (read-timeout 20s); the next job was claimed %d ms after it failed", held, next)
	require.Less(t, held, int64(30000), "the read-timeout plus 10 s")
	require.Less(t, next, int64(10000), "the worker takes the next job")
	require.GreaterOrEqual(t, next, int64(0), "one worker: the next job waited for it")
}
