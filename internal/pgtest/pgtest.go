// Package pgtest gives each test its own PostGIS database with geoingest's
// migrations applied.
//
// The server comes from, in order: TEST_DATABASE_URL (a server on which the
// user may CREATE DATABASE); a PostGIS container through testcontainers-go
// (postgistest.StartContainer) when a Docker API answers or
// GEOINGEST_TEST_POSTGIS=container asks for one, of the image
// GEOINGEST_POSTGIS_IMAGE (default postgistest.DefaultImage); a private
// throwaway cluster started with the machine's initdb/pg_ctl and PostGIS
// (or GEOINGEST_TEST_POSTGIS=cluster). When none can be had the test fails
// with what to install: it never silently skips.
//
// Call pgtest.Main from TestMain so that a private cluster is stopped when
// the package's tests end.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/pgcluster"
	"github.com/geoingest/geoingest/migrations"
	"github.com/geoingest/geoingest/postgistest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var (
	mu        sync.Mutex
	adminURL  string // a superuser connection to the "postgres" database
	template  string
	setupErr  error
	setupDone bool
	counter   atomic.Int64
	stopFns   []func()
)

// Main runs the package's tests, then runs cleanups (for servers the
// package started itself) and stops whatever server pgtest started for
// them. It does not return.
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, f := range cleanups {
		f()
	}
	mu.Lock()
	for _, f := range stopFns {
		f()
	}
	mu.Unlock()
	os.Exit(code)
}

// NewDB creates a fresh database with the migrations applied and returns
// its connection string. The database is dropped at cleanup.
func NewDB(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if !setupDone {
		setupErr = setup()
		setupDone = true
	}
	if setupErr != nil {
		t.Fatalf("pgtest: no PostGIS server for tests: %v", setupErr)
	}
	name := fmt.Sprintf("geoingest_test_%d_%d", os.Getpid(), counter.Add(1))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	// The server may still be closing the migration's connection to the
	// template (SQLSTATE 55006): retry briefly.
	for attempt := 0; ; attempt++ {
		_, err = conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
			pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize()))
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" || attempt == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return withDB(adminURL, name)
}

// AdminURL returns a superuser connection string to the test server's
// "postgres" database (for tests that must create roles or inspect the
// server). It starts the server if needed.
func AdminURL(t testing.TB) string {
	t.Helper()
	NewDB(t)
	return adminURL
}

func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	switch {
	case os.Getenv("TEST_DATABASE_URL") != "":
		adminURL = os.Getenv("TEST_DATABASE_URL")
	case postgistest.Options{}.WithDefaults().WantsContainer():
		c, err := postgistest.StartContainer(ctx, postgistest.Options{}.WithDefaults().Image)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "pgtest: PostGIS in %s\n", c)
		adminURL = c.URL
		stopFns = append(stopFns, func() { _ = c.Terminate(context.Background()) })
	default:
		dir, err := os.MkdirTemp("", "geoingest-pgtest-")
		if err != nil {
			return err
		}
		// The server may run as another OS user: let it reach its directory.
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		c, err := pgcluster.Start(ctx, dir+"/pgdata", nil)
		if err != nil {
			os.RemoveAll(dir)
			return err
		}
		adminURL = c.URL("postgres")
		stopFns = append(stopFns, func() {
			_ = c.Stop(context.Background())
			os.RemoveAll(dir)
		})
	}
	template = fmt.Sprintf("geoingest_template_%d", os.Getpid())
	if err := pgcluster.EnsureDatabase(ctx, adminURL, template); err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	if _, err := migrations.Up(withDB(adminURL, template)); err != nil {
		return err
	}
	stopFns = append([]func(){func() {
		c, err := pgx.Connect(context.Background(), adminURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{template}.Sanitize()+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}}, stopFns...)
	return nil
}

// withDB returns url with its database replaced by name.
func withDB(url, name string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return url
	}
	host := cfg.Host
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable",
		quote(host), cfg.Port, quote(cfg.User), quote(cfg.Password), quote(name))
}

func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
