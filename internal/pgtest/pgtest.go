// Package pgtest gives each test its own PostGIS database with geoingest's
// migrations applied.
//
// The server comes from, in order: TEST_DATABASE_URL (a server on which the
// user may CREATE DATABASE); a PostGIS container through testcontainers-go
// when a Docker API answers; a private throwaway cluster started with the
// machine's initdb/pg_ctl and PostGIS. When none can be had the test fails
// with what to install: it never silently skips.
//
// Call pgtest.Main from TestMain so that a private cluster is stopped when
// the package's tests end.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/pgcluster"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
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
	case dockerAnswers():
		url, stop, err := startContainer(ctx)
		if err != nil {
			return err
		}
		adminURL = url
		stopFns = append(stopFns, stop)
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

// dockerAnswers reports whether a Docker API socket accepts connections.
func dockerAnswers() bool {
	addr := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		addr = strings.TrimPrefix(h, "unix://")
	} else if h != "" {
		return true // a remote engine: let testcontainers try it
	}
	c, err := net.DialTimeout("unix", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func startContainer(ctx context.Context) (string, func(), error) {
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        "postgis/postgis:15-3.4",
			ExposedPorts: []string{"5432/tcp"},
			Env:          map[string]string{"POSTGRES_PASSWORD": "postgres"},
			WaitingFor:   wait.ForLog("database system is ready to accept connections").WithOccurrence(2).WithStartupTimeout(2 * time.Minute),
		},
		Started: true,
	})
	if err != nil {
		return "", nil, fmt.Errorf("postgis container: %w", err)
	}
	host, err := c.Host(ctx)
	if err != nil {
		return "", nil, err
	}
	port, err := c.MappedPort(ctx, "5432")
	if err != nil {
		return "", nil, err
	}
	url := fmt.Sprintf("host=%s port=%d user=postgres password=postgres dbname=postgres sslmode=disable", host, port.Num())
	return url, func() { _ = testcontainers.TerminateContainer(c) }, nil
}
