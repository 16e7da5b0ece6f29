package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/pgcluster"
	"github.com/jackc/pgx/v5"
)

// Restart stops the test server with a fast shutdown (every connection is
// cut, transactions in flight roll back), keeps it down for down, then
// starts it again and waits until it accepts connections. Databases made by
// NewDB survive it. Only the private cluster can be restarted: with
// TEST_DATABASE_URL or a container Restart returns an error saying so.
// Start the server first (NewDB).
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
	mu.Lock()
	url := adminURL
	mu.Unlock()
	if url == "" {
		return "", fmt.Errorf("pgtest: no server started yet (call NewDB first)")
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	if !filepath.IsAbs(cfg.Host) {
		return "", fmt.Errorf("pgtest: the test server at %s is not a private cluster (TEST_DATABASE_URL or a container): it cannot be restarted", cfg.Host)
	}
	if _, err := os.Stat(filepath.Join(cfg.Host, "PG_VERSION")); err != nil {
		return "", fmt.Errorf("pgtest: %s is not a cluster's data directory: it cannot be restarted: %w", cfg.Host, err)
	}
	return cfg.Host, nil
}
