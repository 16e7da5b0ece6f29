package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// The oracle of the year: every source's current rows after its chain of
// versions equal, feature for feature, a full load of its newest version
// into an empty database (properties, geometry and area).

// sourceRows returns the current rows of every source of the bench bucket,
// each as its properties, its geometry's md5 and its area, sorted.
func sourceRows(ctx context.Context, pool *pgxpool.Pool) (map[string][]string, error) {
	rows, err := pool.Query(ctx, `
		SELECT s.source_key, p.properties::text || ' ' || md5(ST_AsEWKB(p.geom)) || ' ' || p.area_m2::text
		FROM geoingest_current_parcels p
		JOIN sources s ON s.current_job_id = p.job_id AND s.target_table = 'parcels'
		WHERE s.source_bucket = 'bench'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var k, r string
		if err := rows.Scan(&k, &r); err != nil {
			return nil, err
		}
		out[k] = append(out[k], r)
	}
	for _, rs := range out {
		slices.Sort(rs)
	}
	return out, rows.Err()
}

// withDatabase returns the URL u with its database name replaced.
func withDatabase(u, name string) string {
	if p, err := url.Parse(u); err == nil && (p.Scheme == "postgres" || p.Scheme == "postgresql") {
		p.Path = "/" + name
		return p.String()
	}
	return u + " dbname=" + name
}

// oracle loads each job of newest (a source's newest version) into a new,
// empty database, and compares every source's rows with pool's. It
// returns the sources whose rows are equal, all the sources, and the
// first difference met.
func oracle(ctx context.Context, c config, pool *pgxpool.Pool, newest []ingest.Job) (equal, total int, diff string, err error) {
	name := fmt.Sprintf("benchyear_oracle_%d", os.Getpid())
	// A database name cannot be a parameter: it is made of digits here.
	if _, err := pool.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		return 0, 0, "", err
	}
	defer func() {
		if _, err := pool.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			fmt.Fprintln(os.Stderr, "benchyear: drop the oracle's database:", err)
		}
	}()
	u := withDatabase(c.url, name)
	if _, err := migrations.Up(u); err != nil {
		return 0, 0, "", err
	}
	opool, err := pgxpool.New(ctx, u)
	if err != nil {
		return 0, 0, "", err
	}
	defer opool.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	metrics := ingest.NewMetrics(prometheus.NewRegistry())
	svc := ingest.NewService(postgis.NewStore(opool, metrics, log), metrics, log)
	svc.Lease = 10 * time.Minute
	for _, j := range newest {
		if r := svc.Run(ctx, j); r.Err != nil {
			return 0, 0, "", fmt.Errorf("oracle: full load of %s: %w", j.Source.Key, r.Err)
		}
	}
	got, err := sourceRows(ctx, pool)
	if err != nil {
		return 0, 0, "", err
	}
	want, err := sourceRows(ctx, opool)
	if err != nil {
		return 0, 0, "", err
	}
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	for k := range keys {
		total++
		if slices.Equal(got[k], want[k]) {
			equal++
			continue
		}
		if diff == "" {
			diff = fmt.Sprintf("%s: %d rows, a full load %d", k, len(got[k]), len(want[k]))
			for i := 0; i < min(len(got[k]), len(want[k])); i++ {
				if got[k][i] != want[k][i] {
					diff += fmt.Sprintf("; first differing row:\n  chain %s\n  full  %s", trunc(got[k][i]), trunc(want[k][i]))
					break
				}
			}
		}
	}
	return equal, total, diff, nil
}

func trunc(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return strings.TrimSpace(s)
}
