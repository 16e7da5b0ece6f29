package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// setNaptime lets autovacuum wake every d for the run (ALTER SYSTEM, which
// only a superuser may do: the embedded cluster's owner can). A simulated
// month passes in about a minute, where a real one gives autovacuum tens of
// thousands of wake-ups; without this, the month's end would be measured
// before autovacuum had looked at the tables once. Elsewhere it says so and
// goes on with the server's setting.
func setNaptime(ctx context.Context, pool *pgxpool.Pool, d time.Duration) {
	secs := fmt.Sprintf("%ds", max(1, int(d.Seconds())))
	// ALTER SYSTEM takes no parameters: the value is a formatted duration.
	if _, err := pool.Exec(ctx, `ALTER SYSTEM SET autovacuum_naptime = '`+secs+`'`); err != nil {
		fmt.Fprintf(os.Stderr, "benchyear: autovacuum_naptime left as it is: %v\n", err)
		return
	}
	if _, err := pool.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		fmt.Fprintf(os.Stderr, "benchyear: reload: %v\n", err)
	}
}

// settle waits, at most limit, until no table of the database holds more
// dead tuples than autovacuum's threshold for it (autovacuum_vacuum_threshold
// plus its scale factor, per table where set, times its live tuples): what
// the rest of a real month would have given autovacuum time to do. The
// month's dead tuples and bloat are then measured as a reader meets them.
func settle(ctx context.Context, pool *pgxpool.Pool, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	if limit > 0 {
		// Other backends report their dead tuples when they go idle, at
		// most every 10 s (PostgreSQL's PGSTAT_IDLE_INTERVAL): counts read
		// sooner may not hold the month's last deletes yet.
		time.Sleep(statsFlush)
	}
	for {
		if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			return err
		}
		var over int
		err := pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
			WHERE s.relname NOT LIKE 'bench_one%'
			  AND s.n_dead_tup > current_setting('autovacuum_vacuum_threshold')::float8
			      + coalesce((SELECT split_part(o, '=', 2)::float8 FROM unnest(c.reloptions) o
			                  WHERE o LIKE 'autovacuum_vacuum_scale_factor=%'),
			                 current_setting('autovacuum_vacuum_scale_factor')::float8) * s.n_live_tup`).Scan(&over)
		if err != nil {
			return err
		}
		if over == 0 || limit <= 0 || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(time.Second)
	}
}

// statsFlush is how long settle waits before it trusts the statistics.
const statsFlush = 11 * time.Second

// bloat is the feature storage's heap size over the bytes of its live
// tuples (pgstattuple_approx over every table in geoingest_store), and the
// same for the shared parcels partition alone, or 0s when the pgstattuple
// extension cannot be created here. A freshly loaded heap is over 1 by
// its page and tuple headers alone.
func bloat(ctx context.Context, pool *pgxpool.Pool) (all, shared float64) {
	if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pgstattuple`); err != nil {
		return 0, 0
	}
	err := pool.QueryRow(ctx, `
		SELECT coalesce(sum(a.table_len)::float8 / nullif(sum(a.approx_tuple_len), 0), 0),
		       coalesce(sum(a.table_len) FILTER (WHERE c.relname = 'parcels_shared')::float8
		                / nullif(sum(a.approx_tuple_len) FILTER (WHERE c.relname = 'parcels_shared'), 0), 0)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
		     LATERAL pgstattuple_approx(c.oid) a
		WHERE n.nspname = 'geoingest_store' AND c.relkind = 'r'`).Scan(&all, &shared)
	if err != nil {
		return 0, 0
	}
	return all, shared
}
