// Package pgtest gives each test of geoingest's own packages its own
// PostGIS database with geoingest's migrations applied: one
// postgistest.Server per test package, started on first use, and the
// fault injection the outage tests need (Restart, Outage).
//
// The server is postgistest's, in its order: TEST_DATABASE_URL (a server
// on which the user may CREATE DATABASE); a PostGIS container through
// testcontainers-go when a Docker API answers or
// GEOINGEST_TEST_POSTGIS=container asks for one, of the image
// GEOINGEST_POSTGIS_IMAGE (default postgistest.DefaultImage); a private
// throwaway cluster started with the machine's initdb/pg_ctl and PostGIS
// (or GEOINGEST_TEST_POSTGIS=cluster). When none can be had the test fails
// with what to install: it never silently skips.
//
// Call pgtest.Main from TestMain so that the server is stopped when the
// package's tests end.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/postgistest"
)

var (
	mu        sync.Mutex
	srv       *postgistest.Server
	setupErr  error
	setupDone bool
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
	if srv != nil {
		_ = srv.Close()
	}
	mu.Unlock()
	os.Exit(code)
}

// server returns the package's server, starting it on first use; it
// fails the test when there is none.
func server(t testing.TB) *postgistest.Server {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if !setupDone {
		// A container's start took over three minutes once, in a CI run
		// with every test package beside it.
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		srv, setupErr = postgistest.Start(ctx, postgistest.Options{Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "pgtest: "+format+"\n", args...)
		}})
		cancel()
		setupDone = true
	}
	if setupErr != nil {
		t.Fatalf("pgtest: no PostGIS server for tests: %v", setupErr)
	}
	return srv
}

// NewDB creates a fresh database with the migrations applied and returns
// its connection string. The database is dropped at cleanup.
func NewDB(t testing.TB) string {
	t.Helper()
	return server(t).NewDB(t)
}

// AdminURL returns a superuser connection string to the test server's
// "postgres" database (for tests that must create roles or inspect the
// server). It starts the server if needed.
func AdminURL(t testing.TB) string {
	t.Helper()
	return server(t).AdminURL()
}

// adminURL is the started server's admin URL, "" before it starts.
func adminURL() string {
	mu.Lock()
	defer mu.Unlock()
	if srv == nil {
		return ""
	}
	return srv.AdminURL()
}
