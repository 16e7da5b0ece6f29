package postgis

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkReportComputeStages profiles geoingest_report_compute as
// installed, on BenchmarkReportRefresh's data (the same environment
// variables): one parcel job written, then, for each CTE of the function's
// body, a copy of the body cut after that CTE and ending in
// `SELECT count(*)` from it, so that it computes that CTE and those it
// reads. Each is timed b.N times on one connection and logged with its
// median, cumulative: everything that CTE needs (a CTE's own part is its
// time less that of the CTEs it reads). Times are
// the backend's CPU time (/proc/PID/schedstat of the server process, when
// the server runs on this machine) and wall time: on a shared machine the
// CPU time is the steadier of the two. The whole function and the job's
// write time are logged as well.
//
//	go test ./ingest/postgis -run '^$' -bench ReportComputeStages -benchtime 5x
func BenchmarkReportComputeStages(b *testing.B) {
	n, detail, admin, county := reportBenchInputs(b)
	svc, store, _ := reportBenchStore(b, admin)
	ctx := context.Background()
	job := benchFileJob(b, county, "parcels/county.geojson", "parcels")
	if r := svc.Run(ctx, job); r.Err != nil || r.Features != int64(n) {
		b.Fatalf("outcome %s, %d features: %v", r.Outcome, r.Features, r.Err)
	}
	conn, err := store.pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	c := conn.Conn()
	var write float64
	var ids, overlapping []int64
	if err := c.QueryRow(ctx, `SELECT write_seconds FROM jobs WHERE job_id = $1`, job.ID).Scan(&write); err != nil {
		b.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT g.unit_ids, g.overlapping_units FROM report_admin_generations g`).Scan(&ids, &overlapping); err != nil {
		b.Fatal(err)
	}
	stages, err := stageFunctions(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	var pid int
	if err := c.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	cpu := func() (time.Duration, bool) {
		s, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			return 0, false
		}
		var ns int64
		if _, err := fmt.Sscan(string(s), &ns); err != nil {
			return 0, false
		}
		return time.Duration(ns), true
	}
	run := func(call string) (cpuMs, wallMs float64) {
		var cpus, walls []float64
		for i := 0; i < b.N; i++ {
			c0, _ := cpu()
			t0 := time.Now()
			rows, err := c.Query(ctx, call, job.ID, ids, overlapping)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			if rows.Close(); rows.Err() != nil {
				b.Fatal(rows.Err())
			}
			walls = append(walls, time.Since(t0).Seconds()*1000)
			if c1, ok := cpu(); ok {
				cpus = append(cpus, (c1-c0).Seconds()*1000)
			}
		}
		return median(cpus), median(walls)
	}
	b.ResetTimer()
	b.Logf("parcels %d, admin detail %d, write %.0f ms", n, detail, write*1000)
	for _, st := range stages {
		cpuMs, wallMs := run(`SELECT pg_temp.` + st.fn + `($1, $2, $3)`)
		b.Logf("%-12s cumulative cpu %6.1f ms (wall %6.1f)", st.cte, cpuMs, wallMs)
	}
	cpuMs, wallMs := run(`SELECT count(*) FROM geoingest_report_compute($1, $2, $3)`)
	b.Logf("%-12s cpu %6.1f ms (wall %6.1f), %.2f of the write", "whole", cpuMs, wallMs, cpuMs/(write*1000))
	b.StopTimer()
	b.ReportMetric(cpuMs, "compute-cpu-ms")
	b.ReportMetric(write*1000, "write-ms")
}

type stageFunction struct{ cte, fn string }

// cteStart finds the CTEs of a function body written as migrations write
// them: `WITH name AS` or `), name AS` at the start of a line.
var cteStart = regexp.MustCompile(`\n\s*(?:WITH|\),)\s+(\w+)\s+AS\b`)

// stageFunctions creates, in the session's temporary schema, one function
// per CTE of geoingest_report_compute's body (but the last, which the
// final SELECT follows), with the function's settings: the body up to that
// CTE and `SELECT count(*)` from it.
func stageFunctions(ctx context.Context, c *pgx.Conn) ([]stageFunction, error) {
	var body string
	var config []string
	if err := c.QueryRow(ctx, `SELECT p.prosrc, coalesce(p.proconfig, '{}') FROM pg_proc p
		WHERE p.proname = 'geoingest_report_compute' AND p.pronamespace = current_schema()::regnamespace`).Scan(&body, &config); err != nil {
		return nil, err
	}
	var set strings.Builder
	for _, kv := range config {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&set, " SET %s = '%s'", pgx.Identifier{k}.Sanitize(), strings.ReplaceAll(v, "'", "''"))
	}
	m := cteStart.FindAllStringSubmatchIndex(body, -1)
	var out []stageFunction
	for i := 0; i+1 < len(m); i++ {
		name := body[m[i][2]:m[i][3]]
		cut := body[:m[i+1][0]] + "\n    )\n    SELECT count(*) FROM " + name
		fn := "report_compute_stage_" + name
		if _, err := c.Exec(ctx, `CREATE FUNCTION pg_temp.`+fn+`(text, bigint[], bigint[]) RETURNS bigint
			LANGUAGE sql STABLE`+set.String()+` AS $stage$`+cut+`$stage$`); err != nil {
			return nil, fmt.Errorf("stage %s: %w", name, err)
		}
		out = append(out, stageFunction{cte: name, fn: fn})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CTEs found in geoingest_report_compute")
	}
	return out, nil
}
