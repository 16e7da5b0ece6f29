package postgis

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// logLines parses the JSON log lines in l.
func logLines(t *testing.T, l *testfiles.SyncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "log line %q", line)
		out = append(out, m)
	}
	return out
}

// jsonLogged puts the env's services on a JSON logger at debug level into
// a buffer.
func (e *rpEnv) jsonLogged() *testfiles.SyncBuffer {
	buf := &testfiles.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.store.log = log
	e.svc.Log = log
	return buf
}

func (e *rpEnv) counter(t *testing.T, name, label string) float64 {
	t.Helper()
	m := e.metrics
	switch name {
	case "claims":
		return testutil.ToFloat64(m.Claims.WithLabelValues(label))
	case "write_gate":
		return testutil.ToFloat64(m.WriteGate.WithLabelValues(label))
	case "features":
		return testutil.ToFloat64(m.FeaturesWritten)
	case "stolen":
		return testutil.ToFloat64(m.LeasesStolen)
	case "mismatch":
		return testutil.ToFloat64(m.PayloadMismatches)
	case "failed":
		return testutil.ToFloat64(m.JobsFailed.WithLabelValues(label))
	}
	t.Fatalf("unknown counter %s", name)
	return 0
}

// TestMetricsCountDuplicatesAtBothGates drives duplicates through both
// gates and reads the counters from the registry a /metrics endpoint
// serves. Write gate: worker A claims with a lease that expires at once
// and stalls after its download; worker B takes over the expired claim
// and writes; A's write is then rejected as already present. Claim gate:
// a third delivery of the committed job stops there. Every log line about
// the job carries its key.
func TestMetricsCountDuplicatesAtBothGates(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	logs := e.jsonLogged()
	ctx := context.Background()
	job := rpJob(t, rpBristolMSOA, "parcels")

	b := ingest.NewService(e.store, e.metrics, e.svc.Log)
	b.Owner, b.Lease = "worker-b", time.Minute
	a := ingest.NewService(e.store, e.metrics, e.svc.Log)
	a.Owner, a.Lease = "worker-a", time.Millisecond
	var bRes ingest.Result
	actx := hooked(ctx, a.Owner, true, func() {
		time.Sleep(20 * time.Millisecond) // A's lease has expired
		bRes = b.Run(ctx, job)
	})
	aRes := a.Run(actx, job)
	require.NoError(t, aRes.Err)
	require.Equal(t, ingest.Written, bRes.Outcome)
	require.Equal(t, ingest.AlreadyPresent, aRes.Outcome, "A must be stopped at the write gate")

	c := e.svc.Run(ctx, job)
	require.NoError(t, c.Err)
	require.True(t, c.Outcome.Duplicate())

	require.Equal(t, 2.0, e.counter(t, "claims", "won"), "A and B won the claim")
	require.Equal(t, 1.0, e.counter(t, "claims", "duplicate"), "the third delivery is a duplicate of the committed job")
	require.Equal(t, 0.0, e.counter(t, "claims", "held"))
	require.Equal(t, 1.0, e.counter(t, "write_gate", "written"))
	require.Equal(t, 1.0, e.counter(t, "write_gate", "already_present"))
	require.Equal(t, 72.0, e.counter(t, "features", ""))
	require.Equal(t, 0.0, e.counter(t, "stolen", ""))

	// The same numbers as the exposition format that /metrics serves.
	require.NoError(t, testutil.GatherAndCompare(e.reg, strings.NewReader(`
# HELP geoingest_claims_total Claim gate outcomes: won; duplicate (the job is committed: acked); held (another worker's live lease: not done, retried after it); reclaimed (this worker's own dead attempt's unreleased claim, taken back at once).
# TYPE geoingest_claims_total counter
geoingest_claims_total{result="duplicate"} 1
geoingest_claims_total{result="held"} 0
geoingest_claims_total{result="won"} 2
# HELP geoingest_features_written_total Features written to feature tables.
# TYPE geoingest_features_written_total counter
geoingest_features_written_total 72
`), "geoingest_claims_total", "geoingest_features_written_total"))
	n, err := testutil.GatherAndCount(e.reg, "geoingest_write_gate_total")
	require.NoError(t, err)
	require.Equal(t, 5, n, "write gate results are all exported, zero or not")

	requireJobOnEveryLine(t, logs, job.ID)
	requireClean(t, e)
}

// TestMetricsStolenLease: worker A's lease expires and B takes the claim
// (B then stalls); A's commit finds the claim not its own: counted and
// logged at ERROR, and the write gate keeps the job exactly once.
func TestMetricsStolenLease(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	logs := e.jsonLogged()
	ctx := context.Background()
	job := rpJob(t, rpBristolMSOA, "parcels")
	a := ingest.NewService(e.store, e.metrics, e.svc.Log)
	a.Owner, a.Lease = "worker-a", time.Millisecond
	actx := hooked(ctx, a.Owner, true, func() {
		time.Sleep(20 * time.Millisecond)
		r, err := e.store.Claim(ctx, job, "worker-b", time.Minute)
		require.NoError(t, err)
		require.Equal(t, ingest.ClaimWon, r.Result)
	})
	res := a.Run(actx, job)
	require.NoError(t, res.Err)
	require.Equal(t, ingest.Written, res.Outcome)
	require.Equal(t, 1.0, e.counter(t, "stolen", ""))
	var sawError bool
	for _, l := range logLines(t, logs) {
		if l["level"] == "ERROR" && strings.Contains(l["msg"].(string), "stolen lease") {
			sawError = true
		}
	}
	require.True(t, sawError, "no ERROR line about the stolen lease")
	requireJobOnEveryLine(t, logs, job.ID)
	requireClean(t, e)
}

// TestPayloadMismatchFailsTheMessage puts a ledger row with another
// content hash under the key a file will produce, as a key collision or a
// non-deterministic source would: the delivery must fail permanently,
// log at ERROR and count a payload mismatch, not ack as a duplicate.
func TestPayloadMismatchFailsTheMessage(t *testing.T) {
	t.Parallel()
	e := rpSetup(t)
	logs := e.jsonLogged()
	ctx := context.Background()
	job := rpJob(t, rpBristolMSOA, "parcels")
	e.exec(t, `INSERT INTO jobs (job_id, source_bucket, source_key, version_token, params, pipeline,
		pipeline_version, target_table, status, content_hash)
		VALUES ($1, $2, $3, $4, '{}', 'geoingest', '1', 'parcels', 'current', $5)`,
		job.ID, job.Source.Bucket, job.Source.Key, job.Source.VersionToken, strings.Repeat("0", 64))

	res := e.svc.Run(ctx, job)
	require.Equal(t, ingest.Failed, res.Outcome, "a payload mismatch must not be acked as a duplicate")
	require.Error(t, res.Err)
	require.Equal(t, ingest.Permanent, ingest.KindOf(res.Err))
	require.Contains(t, res.Err.Error(), "payload mismatch")
	require.Equal(t, 1.0, e.counter(t, "mismatch", ""))
	require.Equal(t, 1.0, e.counter(t, "failed", "permanent"))
	require.Equal(t, 0.0, e.counter(t, "write_gate", "already_present"))
	require.Equal(t, 0.0, e.counter(t, "features", ""))
	var n int
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT count(*) FROM parcels`).Scan(&n))
	require.Zero(t, n)
	var state string
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT state FROM claims WHERE job_id = $1`, job.ID).Scan(&state))
	require.Equal(t, "FAILED", state)
	var sawError bool
	for _, l := range logLines(t, logs) {
		if l["level"] == "ERROR" && strings.Contains(l["msg"].(string), "payload mismatch") {
			sawError = true
		}
	}
	require.True(t, sawError, "no ERROR line about the payload mismatch")
	requireJobOnEveryLine(t, logs, job.ID)
}

// requireJobOnEveryLine requires every log line to carry the job's key as
// "job".
func requireJobOnEveryLine(t *testing.T, logs *testfiles.SyncBuffer, jobID string) {
	t.Helper()
	lines := logLines(t, logs)
	require.NotEmpty(t, lines)
	for _, l := range lines {
		require.Equal(t, jobID, l["job"], "log line without the job key: %v", l)
	}
}
