package postgistest_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/ingest/postgis"
	"github.com/geoingest/geoingest/postgistest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// srv is the package's PostGIS server, started once by TestMain.
var srv *postgistest.Server

func TestMain(m *testing.M) {
	var err error
	srv, err = postgistest.Start(context.Background(), postgistest.Options{
		Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// TestIngestTwiceWritesOnce is what a user's integration test looks like:
// a fresh database with geoingest's schema, geoingest's own ingest code
// run on it, and the user's query against geoingest's tables.
func TestIngestTwiceWritesOnce(t *testing.T) {
	ctx := context.Background()
	url := srv.NewDB(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	metrics := ingest.NewMetrics(prometheus.NewRegistry())
	svc := ingest.NewService(postgis.NewStore(pool, metrics, log), metrics, log)

	for i := range 2 {
		src, fetch, err := localfs.Source("../testdata/synthetic/admin.geojson")
		if err != nil {
			t.Fatal(err)
		}
		job, err := ingest.NewJob(src, ingest.DefaultParams("admin_units"), fetch)
		if err != nil {
			t.Fatal(err)
		}
		res := svc.Run(ctx, job)
		if i == 0 && res.Outcome != ingest.Written || i == 1 && !res.Outcome.Duplicate() {
			t.Fatalf("delivery %d: %v", i+1, res)
		}
	}
	var jobs, units int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM admin_units)`).Scan(&jobs, &units); err != nil {
		t.Fatal(err)
	}
	if jobs != 1 || units != 120 {
		t.Fatalf("%d jobs and %d admin units, want 1 and 120", jobs, units)
	}
}

// TestNewDBIsFreshAndDropped: each NewDB is a database of its own with the
// schema and no rows, and it is gone after the test.
func TestNewDBIsFreshAndDropped(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("inner", func(t *testing.T) {
		url := srv.NewDB(t)
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		var n int
		if err := pool.QueryRow(ctx, `SELECT current_database(), (SELECT count(*) FROM parcels)`).Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("a new database holds %d parcels", n)
		}
	})
	pool, err := pgxpool.New(ctx, srv.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("database %s outlived its test", name)
	}
}

// Example shows the whole of a package's setup in one function; in a
// test package, Start goes in TestMain and NewDB in each test.
func Example() {
	ctx := context.Background()
	srv, err := postgistest.Start(ctx, postgistest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	url, err := srv.CreateDB(ctx) // NewDB(t) in a test
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.DropDB(ctx, url)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	var n int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_current_parcels`).Scan(&n)
	fmt.Println("current parcels:", n)
}
