package main

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/geoingest/geoingest/postgistest/hatest"
)

// TestServeThroughputHA measures (it does not test) small jobs per second
// with 1, 2 and 4 `serve` processes (--workers 4 each) against a
// pg_auto_failover pair with a synchronous standby, on one SQS queue:
// jobs/s is counted from the first commit to the last, so that start-up
// is not in it. Run by scripts/bench-failover.sh (GEOINGEST_BENCH_HA=1;
// GEOINGEST_BENCH_HA_JOBS jobs per round, default 300).
func TestServeThroughputHA(t *testing.T) {
	if os.Getenv("GEOINGEST_BENCH_HA") == "" {
		t.Skip("a measurement: set GEOINGEST_BENCH_HA=1 (scripts/bench-failover.sh)")
	}
	jobs := 300
	if s := os.Getenv("GEOINGEST_BENCH_HA_JOBS"); s != "" {
		var err error
		if jobs, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	// GEOINGEST_BENCH_HA_LOGDIR keeps every serve's log there, at info.
	logDir, level := os.Getenv("GEOINGEST_BENCH_HA_LOGDIR"), "warn"
	if logDir != "" {
		level = "info"
	}
	hc := hatest.Start(t, hatest.Options{})
	c := newCrashEnv(t, "throughput")
	c.db = hc.URL()
	file := squaresFile(t, 10)
	for _, serves := range []int{1, 2, 4} {
		prefix := fmt.Sprintf("parcels/s%d/", serves) // parcels/: the default route
		var objs []object
		for i := 0; i < jobs; i++ {
			objs = append(objs, upload(t, c.s3.Client, c.bucket, fmt.Sprintf("%sp%04d.geojson", prefix, i), file, i+1))
		}
		for i := 0; i < len(objs); i += 10 {
			sendBody(t, c.sqs.Client, c.queueURL, notification(c.bucket, objs[i:min(i+10, len(objs))]...))
		}
		var ws []*worker
		for i := 0; i < serves; i++ {
			ws = append(ws, c.serve(t, nil, "--workers", "4", "--log-level", level))
		}
		eventually(t, 10*time.Minute, "every job committed", func() bool {
			return queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE source_key LIKE $1`, prefix+"%") == int64(jobs)
		})
		ms := queryInt(t, c.db, `SELECT (extract(epoch FROM max(committed_at) - min(committed_at)) * 1000)::bigint FROM jobs WHERE source_key LIKE $1`, prefix+"%")
		ms95 := queryInt(t, c.db, `SELECT (extract(epoch FROM percentile_disc(0.95) WITHIN GROUP (ORDER BY committed_at) - min(committed_at)) * 1000)::bigint FROM jobs WHERE source_key LIKE $1`, prefix+"%")
		retried := queryInt(t, c.db, `SELECT count(*) FROM claims WHERE source_key LIKE $1 AND attempts > 1`, prefix+"%")
		for i, w := range ws {
			w.stop(t)
			if logDir != "" {
				if err := os.WriteFile(fmt.Sprintf("%s/serves%d-%d.log", logDir, serves, i), []byte(w.stderr.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Logf("throughput: %d serve(s) x 4 workers, %d small jobs (10 features), synchronous standby: %.1f jobs/s first to last commit (%.1f s), %.1f jobs/s over the first 95 %% (%.1f s); %d jobs claimed more than once",
			serves, jobs, float64(jobs-1)/(float64(ms)/1000), float64(ms)/1000, 0.95*float64(jobs)/(float64(ms95)/1000), float64(ms95)/1000, retried)
	}
}
