package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/pgcluster"
	"github.com/jackc/pgx/v5"
)

// ErrCannotRestart is returned by Restart when the test server is not the
// private cluster.
var ErrCannotRestart = errors.New("pgtest: the test server is not a private cluster: it cannot be restarted")

// Restart stops the test server with a fast shutdown (every connection is
// cut, transactions in flight roll back), keeps it down for down, then
// starts it again and waits until it accepts connections. Databases made by
// NewDB survive it. Only the private cluster can be restarted: with
// TEST_DATABASE_URL or a container Restart returns ErrCannotRestart (see
// Outage). Start the server first (NewDB).
func Restart(ctx context.Context, t testing.TB, down time.Duration) error {
	t.Helper()
	dir, err := clusterDir()
	if err != nil {
		return err
	}
	c, err := pgcluster.Open(dir)
	if err != nil {
		return err
	}
	if err := c.Stop(ctx); err != nil {
		return fmt.Errorf("pgtest: restart: %w", err)
	}
	select {
	case <-time.After(down):
	case <-ctx.Done():
	}
	// Start even when ctx is done: the other tests need their server.
	if _, err := pgcluster.Start(context.WithoutCancel(ctx), dir, nil); err != nil {
		return fmt.Errorf("pgtest: restart: %w", err)
	}
	return nil
}

// clusterDir returns the data directory of the private cluster that
// serves the tests (its Unix socket lives there), or an error when the
// server is not one pgtest started with pg_ctl.
func clusterDir() (string, error) {
	url := adminURL()
	if url == "" {
		return "", fmt.Errorf("pgtest: no server started yet (call NewDB first)")
	}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		return "", fmt.Errorf("%w (TEST_DATABASE_URL)", ErrCannotRestart)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	if !filepath.IsAbs(cfg.Host) {
		return "", fmt.Errorf("%w (server at %s)", ErrCannotRestart, cfg.Host)
	}
	if _, err := os.Stat(filepath.Join(cfg.Host, "PG_VERSION")); err != nil {
		return "", fmt.Errorf("%w (%s: %v)", ErrCannotRestart, cfg.Host, err)
	}
	return cfg.Host, nil
}

// Outage makes the database of dbURL (one made by NewDB) unreachable for
// down, on any test server, without disturbing other databases: it refuses
// new connections to it (ALLOW_CONNECTIONS false), cuts every session
// connected to it, and after down allows connections again.
func Outage(ctx context.Context, t testing.TB, dbURL string, down time.Duration) error {
	t.Helper()
	return OutageCut(ctx, t, dbURL, down, nil)
}

// OutageCut is Outage that calls cut (when not nil) once the outage is
// whole: new connections refused and every open session cut. A test that
// must act only while nothing can reach the database waits for it.
func OutageCut(ctx context.Context, t testing.TB, dbURL string, down time.Duration, cut func()) error {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	conn, err := pgx.Connect(ctx, adminURL())
	if err != nil {
		return fmt.Errorf("pgtest: outage: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	name := pgx.Identifier{cfg.Database}.Sanitize()
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("pgtest: outage: %w", err)
	}
	_, err = conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", cfg.Database)
	if err == nil && cut != nil {
		cut()
	}
	select {
	case <-time.After(down):
	case <-ctx.Done():
	}
	if _, aerr := conn.Exec(context.WithoutCancel(ctx), "ALTER DATABASE "+name+" ALLOW_CONNECTIONS true"); aerr != nil {
		return fmt.Errorf("pgtest: outage: allow connections again: %w", aerr)
	}
	if err != nil {
		return fmt.Errorf("pgtest: outage: cut sessions: %w", err)
	}
	return nil
}
