package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/geoingest/geoingest/geomio/pagetrim"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// app is what a command that uses the database works with: the pool, and
// the metrics, store and service on it. Main.open makes it; Close closes
// the pool.
type app struct {
	pool    *pgxpool.Pool
	metrics *ingest.Metrics
	store   ingest.Store
	// compactor folds own partitions into the shared ones (the store).
	compactor ingest.Compactor
	svc       *ingest.Service
	// readPool and reader are --read-database-url's (a replica), nil
	// when reads go to the primary; reads() chooses.
	readPool *pgxpool.Pool
	reader   *postgis.Store
}

// reads is the store for reads that need not see their own writes: the
// replica's when there is one, else the primary's.
func (a *app) reads() ingest.Store {
	if a.reader != nil {
		return a.reader
	}
	return a.store
}

// readsPool is reads' pool.
func (a *app) readsPool() *pgxpool.Pool {
	if a.readPool != nil {
		return a.readPool
	}
	return a.pool
}

// open is the preamble of every command that uses the database, written
// once: it sets up m.Log from d's log flags, opens the database (openDB:
// the schema checked, or migrated when behind), and makes the metrics
// (registered with reg; nil for instruments nobody scrapes), the store
// and the service.
func (m *Main) open(ctx context.Context, d *dbFlags, reg prometheus.Registerer) (*app, error) {
	if err := m.setupLog(d); err != nil {
		return nil, err
	}
	pool, err := m.openDB(ctx, d)
	if err != nil {
		return nil, err
	}
	metrics := ingest.NewMetrics(reg)
	store := postgis.NewStore(pool, metrics, m.Log)
	if v := m.Getenv("GEOINGEST_OWN_PARTITION_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			pool.Close()
			return nil, fmt.Errorf("GEOINGEST_OWN_PARTITION_BYTES: %q is not a positive number of bytes", v)
		}
		store.OwnPartitionBytes = n
	}
	// A new version of a source writes only what changed, unless this
	// asks for the full replace (docs/changes.md; benchmarks compare both).
	store.FullReplace = m.Getenv("GEOINGEST_FULL_REPLACE") == "1"
	store.HistoryCopy = m.Getenv("GEOINGEST_HISTORY_COPY") == "1"
	// The raw-bytes prefilter of a new version (Store.NoPrefilter): the
	// features whose bytes are a current row's are not parsed, unless
	// this turns it off.
	store.NoPrefilter = m.Getenv("GEOINGEST_PREFILTER") == "0"
	// The share of a version's rows, added or changed, above which a
	// version with a table of its own is written straight into it
	// (Store.DiffRewriteAbove; negative: always), for tests and benchmarks.
	if v := m.Getenv("GEOINGEST_DIFF_REWRITE_ABOVE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f > 1 {
			pool.Close()
			return nil, fmt.Errorf("GEOINGEST_DIFF_REWRITE_ABOVE: %q is not a share of at most 1", v)
		}
		store.DiffRewriteAbove = f
	}
	svc := ingest.NewService(store, metrics, m.Log)
	// Where jobs download and extract (serve's --work-dir overrides it).
	svc.TempDir = m.Getenv("GEOINGEST_WORK_DIR")
	// The first job of 1 MiB or more gives back, once its file is open and
	// read from, the pages of code and read-only data that start-up and
	// the opening alone used (docs/benchmarks.md, "Memory"). Once per
	// process: after it, a trim would give back the pages the previous
	// job's reading used, which the next one maps again.
	svc.TrimMemory = sync.OnceFunc(func() { _, _ = pagetrim.Trim() })
	// Start-up is done: the pages of code and data that only package
	// initialisation, flag parsing and the database's opening used go.
	_, _ = pagetrim.Trim()
	a := &app{pool: pool, metrics: metrics, store: store, compactor: store, svc: svc}
	if d.readDatabaseURL != "" {
		rp, err := m.openReadDB(ctx, d.readDatabaseURL)
		if err != nil {
			pool.Close()
			return nil, err
		}
		a.readPool, a.reader = rp, postgis.NewStore(rp, nil, m.Log)
	}
	return a, nil
}

// Close closes the database pools.
func (a *app) Close() {
	a.pool.Close()
	if a.readPool != nil {
		a.readPool.Close()
	}
}

// openWaiting is open for serve: while no server accepts the connection
// (a failover in progress: refused, timed out, a standby that is not yet
// writable, the database system starting up), it tries again every few
// seconds for up to wait (--start-timeout), so that a serve started or
// restarted during a failover comes up once the new primary does. Any
// other error (authentication, a schema behind) returns at once.
func (m *Main) openWaiting(ctx context.Context, d *dbFlags, reg prometheus.Registerer, wait time.Duration) (*app, error) {
	deadline := time.Now().Add(wait)
	for attempt := 1; ; attempt++ {
		a, err := m.open(ctx, d, reg)
		if err == nil || !unreachable(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return a, err
		}
		m.Log.Warn("database not reachable at start-up; retrying (--start-timeout)", "attempt", attempt, "error", err.Error())
		select {
		case <-time.After(min(time.Duration(attempt)*time.Second, 5*time.Second)):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// unreachable reports whether err says no server accepted a connection
// (as opposed to one that answered and refused: a bad password, a
// missing database, a schema behind).
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		var pgErr *pgconn.PgError
		// The server answered: 57P03 (starting up, shutting down, in
		// recovery) is a failover's; 28xxx (authentication) and 3D000
		// (no such database) are not.
		return !errors.As(err, &pgErr) || pgErr.Code == "57P03"
	}
	s := err.Error()
	return strings.Contains(s, "failed to connect") && !strings.Contains(s, "SQLSTATE 28") && !strings.Contains(s, "SQLSTATE 3D000")
}
