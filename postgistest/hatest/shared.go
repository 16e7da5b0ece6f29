package hatest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// template is the database every Shared test's database is copied from:
// geoingest's schema, never connected to, so that CREATE DATABASE can copy
// it at any time.
const template = "geoingest_template"

var shared struct {
	mu       sync.Mutex
	clusters map[bool]*sharedCluster // by Options.Async
}

type sharedCluster struct {
	c    *Cluster
	err  error
	use  sync.Mutex // held by the test using the formation
	next int        // the next database's number
}

// Shared returns a formation of the package's tests (one per kind:
// synchronous or asynchronous standby; o.Settings and o.ReadReplica are
// not supported), started by the first test that asks and stopped by
// StopShared, which the package's TestMain must call. Starting a formation
// takes tens of seconds, so a package's tests share one.
//
// The test has the formation to itself until it ends: tests that share a
// formation run one at a time, since a failover cuts every client of it.
// The returned Cluster's URLs name a new database of the test's own,
// with geoingest's schema. When the test ends, a node it crashed
// (KillPrimary) is rejoined and the formation is made healthy for the
// next test.
func Shared(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.ReadReplica || len(o.Settings) > 0 {
		t.Fatal("hatest.Shared: ReadReplica and Settings need a formation of the test's own (Start)")
	}
	if _, err := exec.LookPath("pg_autoctl"); err != nil {
		t.Skip("hatest: pg_autoctl not found: " + InstallHint)
	}
	shared.mu.Lock()
	if shared.clusters == nil {
		shared.clusters = map[bool]*sharedCluster{}
	}
	sc := shared.clusters[o.Async]
	if sc == nil {
		sc = &sharedCluster{}
		shared.clusters[o.Async] = sc
	}
	shared.mu.Unlock()

	sc.use.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if sc.c == nil && sc.err == nil {
		sc.c, sc.err = StartCluster(ctx, o, func(f string, args ...any) { fmt.Fprintf(os.Stderr, f+"\n", args...) })
		if sc.err == nil {
			sc.err = sc.c.createTemplate(ctx)
		}
	}
	if sc.err != nil {
		sc.use.Unlock()
		t.Fatalf("hatest: the shared formation: %v", sc.err)
	}
	sc.next++
	name := fmt.Sprintf("%s_%d", Database, sc.next)
	c := *sc.c
	c.db = name
	c.log = t.Logf
	t.Cleanup(func() {
		defer sc.use.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, n := range sc.c.Nodes {
			select {
			case <-n.done: // crashed by the test: rejoin it
				if err := sc.c.Rejoin(ctx, n); err != nil {
					sc.err = err
					t.Errorf("hatest: rejoining %s for the next test: %v", n.Name, err)
					return
				}
			default:
			}
		}
		// A standby whose replay the test paused (and did not resume, on
		// a failure) would keep the next test's database from it.
		for _, n := range sc.c.Nodes {
			if conn, err := pgx.Connect(ctx, sc.c.adminURL(n, "postgres")); err == nil {
				_, _ = conn.Exec(ctx, "SELECT pg_wal_replay_resume() WHERE pg_is_in_recovery() AND pg_is_wal_replay_paused()")
				conn.Close(ctx)
			}
		}
		if err := sc.c.WaitHealthy(ctx); err != nil {
			sc.err = err
			t.Errorf("hatest: the shared formation did not get healthy again: %v", err)
		}
	})
	if err := sc.c.createDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	return &c
}

// StopShared stops the formations Shared started; a package's TestMain
// calls it after its tests.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for _, sc := range shared.clusters {
		if sc.c != nil {
			sc.c.Stop()
		}
	}
	shared.clusters = nil
}

// createTemplate copies geoingest's database into the template, retrying
// while a session the set-up opened is still ending.
func (c *Cluster) createTemplate(ctx context.Context) error {
	return c.createDatabaseFrom(ctx, template, Database)
}

// createDatabase creates a database of geoingest's schema on the primary
// and waits until every standby has replayed it: a client of the
// multi-host URL that meets a standby without it gets "database does not
// exist", which ends its connection attempt instead of trying the next
// host.
func (c *Cluster) createDatabase(ctx context.Context, name string) error {
	if err := c.createDatabaseFrom(ctx, name, template); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := c.waitConnect(ctx, n, c.adminURL(n, name)); err != nil {
			return fmt.Errorf("hatest: database %s on %s: %w", name, n.Name, err)
		}
	}
	return nil
}

func (c *Cluster) createDatabaseFrom(ctx context.Context, name, from string) error {
	var err error
	for i := 0; i < 50; i++ {
		var p *Node
		if p, err = c.Primary(ctx); err == nil {
			var conn *pgx.Conn
			if conn, err = pgx.Connect(ctx, c.adminURL(p, "postgres")); err == nil {
				_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{from}.Sanitize())
				conn.Close(context.WithoutCancel(ctx))
				if err == nil {
					return nil
				}
				if !strings.Contains(err.Error(), "being accessed by other users") {
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("hatest: create database %s: %w", name, err)
}
