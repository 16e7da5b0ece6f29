package chaos

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	ingests3 "github.com/geoingest/geoingest/ingest/s3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// areaTolerance is the relative difference allowed between the area
// PostGIS gives the uploaded polygons and the area of the rows written.
const areaTolerance = 1e-6

// expected is what a key must hold in the end: its newest version's
// features.
type expected struct {
	obj    *object
	n      int
	areaM2 float64
}

// found is what the database holds for a key.
type found struct {
	currentToken            string // the current job's version token ("" for none)
	ledgerN                 int64
	ledgerArea              float64
	rows, distinct, matched int64 // feature rows of every job of the key; distinct uids; uids of the newest version
	areaM2                  float64
}

// report checks the end state and prints what the run did and found.
// Every failed check is reported (t.Errorf), not only the first.
func (r *run) report(ctx context.Context, pool *pgxpool.Pool, db string, c *sqs.Client, dlqURL string, drained bool) {
	t := r.t
	checkStart := time.Now()
	// geoingest verify, as an operator runs it, while the suite computes
	// its own checks.
	var verifyOut []byte
	var verifyErr error
	verified := make(chan struct{})
	go func() {
		defer close(verified)
		verifyOut, verifyErr = exec.Command(binary, "verify", "--database-url", db).CombinedOutput()
	}()
	const bucket = "uploads"
	newest := map[string]*object{}
	for _, o := range r.plan {
		if p := newest[o.key]; p == nil || o.version > p.version {
			newest[o.key] = o
		}
	}
	keys := sortedKeys(newest)

	// What was uploaded: counts, and areas as PostGIS computes them from
	// the uploaded polygons themselves.
	want := map[string]expected{}
	wantRows := 0
	for _, k := range keys {
		o := newest[k]
		if o.bad != "" {
			continue
		}
		ps := o.parcels()
		geoms := make([]string, len(ps))
		for i, p := range ps {
			geoms[i] = string(p.geom)
		}
		var area float64
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(sum(ST_Area(ST_GeomFromGeoJSON(g)::geography)), 0) FROM unnest($1::text[]) g`, geoms).Scan(&area))
		want[k] = expected{obj: o, n: len(ps), areaM2: area}
		wantRows += len(ps)
	}

	// What the database holds.
	got := map[string]*found{}
	for _, k := range keys {
		got[k] = &found{}
	}
	rows, err := pool.Query(ctx, `SELECT s.source_key, j.version_token, j.feature_count, j.total_area_m2
		FROM sources s JOIN jobs j ON j.job_id = s.current_job_id WHERE s.source_bucket = $1`, bucket)
	require.NoError(t, err)
	for rows.Next() {
		var k, tok string
		var n int64
		var a float64
		require.NoError(t, rows.Scan(&k, &tok, &n, &a))
		if f := got[k]; f != nil {
			f.currentToken, f.ledgerN, f.ledgerArea = tok, n, a
		}
	}
	require.NoError(t, rows.Err())
	prefixes := make([]string, len(keys))
	for i, k := range keys {
		prefixes[i] = fmt.Sprintf("%s#v%d#", k, newest[k].version)
	}
	rows, err = pool.Query(ctx, `
		SELECT e.key, count(p.id), count(DISTINCT p.properties->>'uid'),
		       count(p.id) FILTER (WHERE starts_with(p.properties->>'uid', e.prefix)),
		       coalesce(sum(ST_Area(p.geom::geography)), 0)
		  FROM unnest($1::text[], $2::text[]) AS e(key, prefix)
		  LEFT JOIN jobs j ON j.source_bucket = $3 AND j.source_key = e.key
		  LEFT JOIN parcels p ON p.job_ref = j.job_ref
		 GROUP BY e.key`, keys, prefixes, bucket)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		var f found
		require.NoError(t, rows.Scan(&k, &f.rows, &f.distinct, &f.matched, &f.areaM2))
		g := got[k]
		g.rows, g.distinct, g.matched, g.areaM2 = f.rows, f.distinct, f.matched, f.areaM2
	}
	require.NoError(t, rows.Err())

	var lost, doubled, wrong []string
	for _, k := range keys {
		w, ok := want[k]
		g := got[k]
		if !ok { // a bad object: nothing current, nothing written
			if g.currentToken != "" || g.rows != 0 {
				wrong = append(wrong, fmt.Sprintf("%s (meant to fail): current %q, %d rows", k, g.currentToken, g.rows))
			}
			continue
		}
		switch {
		case g.currentToken != w.obj.etag || g.matched < int64(w.n):
			lost = append(lost, fmt.Sprintf("%s v%d (%d features, ETag %s): current version %q, %d of its features present",
				k, w.obj.version, w.n, w.obj.etag, g.currentToken, g.matched))
		case g.rows > int64(w.n) || g.distinct < g.rows || g.ledgerN != int64(w.n):
			doubled = append(doubled, fmt.Sprintf("%s v%d: %d rows (%d distinct) for %d features, ledger %d", k, w.obj.version, g.rows, g.distinct, w.n, g.ledgerN))
		case relDiff(g.areaM2, w.areaM2) > areaTolerance || relDiff(g.ledgerArea, w.areaM2) > areaTolerance:
			wrong = append(wrong, fmt.Sprintf("%s v%d: area %.3f m² in the rows, %.3f in the ledger, %.3f uploaded", k, w.obj.version, g.areaM2, g.ledgerArea, w.areaM2))
		}
	}

	q := func(sql string, args ...any) int64 {
		var n int64
		require.NoError(t, pool.QueryRow(ctx, sql, args...).Scan(&n), sql)
		return n
	}
	totalRows := q(`SELECT count(*) FROM parcels`)
	strayRows := q(`SELECT count(*) FROM parcels p LEFT JOIN jobs j USING (job_ref) WHERE j.status IS DISTINCT FROM 'current'`)
	dupUIDs := q(`SELECT count(*) FROM (SELECT 1 FROM parcels GROUP BY properties->>'uid' HAVING count(*) > 1) d`)
	dupGeoms := q(`SELECT count(*) - count(DISTINCT ST_AsEWKB(geom)) FROM parcels`)
	adminRows := q(`SELECT count(*) FROM admin_units`)
	heldClaims := q(`SELECT count(*) FROM claims WHERE state = 'CLAIMED'`)
	currentJobs := q(`SELECT count(*) FROM jobs WHERE status = 'current'`)
	statuses := map[string]int64{}
	rows, err = pool.Query(ctx, `SELECT status, count(*) FROM jobs GROUP BY status`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		var n int64
		require.NoError(t, rows.Scan(&s, &n))
		statuses[s] = n
	}
	require.NoError(t, rows.Err())
	claimStates := map[string]int64{}
	rows, err = pool.Query(ctx, `SELECT state, count(*) FROM claims GROUP BY state`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		var n int64
		require.NoError(t, rows.Scan(&s, &n))
		claimStates[s] = n
	}
	require.NoError(t, rows.Err())

	// The objects meant to fail: FAILED with a reason.
	var badKeys []string
	for _, k := range keys {
		if newest[k].bad != "" {
			badKeys = append(badKeys, k)
			var state, reason string
			err := pool.QueryRow(ctx, `SELECT state, coalesce(last_error, '') FROM claims WHERE source_bucket = $1 AND source_key = $2`, bucket, k).Scan(&state, &reason)
			if err != nil || state != "FAILED" || reason == "" {
				wrong = append(wrong, fmt.Sprintf("%s (meant to fail): claim %q, reason %q, %v", k, state, reason, err))
			}
		}
	}

	failedGood := q(`SELECT count(*) FROM claims WHERE state = 'FAILED' AND NOT (source_key = ANY($1::text[]))`, badKeys)

	// The dead-letter queue.
	dlq := r.drainDLQ(ctx, c, dlqURL)
	<-verified

	// What the serves did, from their logs and metrics.
	logCounts := r.fleet.logCounts()
	stolenLogged := 0
	for k, n := range logCounts {
		if strings.Contains(k, "stolen lease") {
			stolenLogged += n
		}
	}
	metrics := r.fleet.metrics

	// The report.
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("")
	p("=== chaos: what it did ===")
	mult := []string{}
	for k := 1; k <= 3; k++ {
		mult = append(mult, fmt.Sprintf("%d×%d", r.del.copies[k], k))
	}
	nVersions2 := 0
	nLarge := 0
	for _, o := range r.plan {
		if o.version == 2 {
			nVersions2++
		}
		if o.large {
			nLarge++
		}
	}
	p("uploads:        %d objects to versitygw (%d keys: %d with a second version, %d large (%d-%d features), %d meant to fail)",
		len(r.plan), len(keys), nVersions2, nLarge, r.cfg.spec.largeN/2, r.cfg.spec.largeN*2, len(badKeys))
	p("notifications:  %d captured from versitygw's webhook (the s3:TestEvent included)", r.hook.count())
	p("deliveries:     %d messages sent to SQS, shuffled: notifications by copies %s; %d extra copies sent by the stealer",
		r.del.sentCount(), strings.Join(mult, ", "), r.del.extra)
	p("kills:          %d SIGKILLs of a serve (every %s on average), %d restarts, %d exits not caused by the suite",
		r.fleet.kills, r.cfg.killEvery, r.fleet.restarts, r.fleet.selfExit)
	r.faults.report(p, logCounts, r.fleet.lineCounts(errStalledText, errShortText))
	if r.ha != nil {
		r.failoverReport(p)
	} else if r.pgOutageOnly {
		p("postgres:       NOT restarted (not pgtest's private cluster): the database refused connections and its sessions were cut at %s for %s",
			r.pgRestartAt.Round(time.Second), r.cfg.pgDown)
	} else {
		p("postgres:       restarted once at %s (down %s; stop, down and start took %s)",
			r.pgRestartAt.Round(time.Second), r.cfg.pgDown, r.pgRestartTook.Round(100*time.Millisecond))
	}
	var folded, own int64
	_ = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE job_ref < 0 AND job_ref > -4294967296), count(*) FILTER (WHERE job_ref > 0 AND status = 'current') FROM jobs`).Scan(&folded, &own)
	p("compaction:     %d generations folded into the shared partition (serves with %s), %d own partitions left; %d `geoingest compact` SIGKILLed mid-fold",
		folded, strings.Join(compactArgs, " "), own, r.foldKills.Load())
	p("steals:         %d attempts, %d claims taken from a live serve mid-job, %d stolen leases logged by their victims; in all %d stolen leases logged (ERROR), geoingest_leases_stolen_total %g (scraped before kills)",
		r.steal.attempts, r.steal.took, r.steal.stolen.Load(), stolenLogged, metrics["geoingest_leases_stolen_total"])
	for _, n := range r.steal.notes {
		p("                %s", n)
	}
	p("time:           setup %s, chaos %s (planned %s; the last uploads and steals may run over), drain %s (%s), stop %s, checks %s",
		r.took.setup.Round(100*time.Millisecond), r.took.chaos.Round(100*time.Millisecond), r.cfg.duration, r.took.drain.Round(100*time.Millisecond),
		map[bool]string{true: "the queue emptied", false: "DID NOT EMPTY"}[drained],
		r.took.stop.Round(100*time.Millisecond), time.Since(checkStart).Round(100*time.Millisecond))
	p("serve logs:")
	for _, k := range sortedKeys(logCounts) {
		p("  %6d  %s", logCounts[k], k)
	}
	p("serve metrics (summed over the processes, each scraped just before its kill or stop):")
	for _, k := range sortedKeys(metrics) {
		if metrics[k] != 0 && !strings.HasPrefix(k, "geoingest_job_duration_seconds_count") {
			p("  %8g  %s", metrics[k], k)
		}
	}
	p("=== chaos: what it found ===")
	changesFound, changesWrong := "", []string(nil)
	if r.changes != nil {
		changesFound, changesWrong = checkChanges(ctx, pool, r.changes)
		p("changes:        %s (the webhook's cursor passed every record %s after the drain: %v)", changesFound, r.took.changes.Round(100*time.Millisecond), r.changesDelivered)
	}
	p("keys:           %d expected current, %d current jobs; jobs by status %v; claims by state %v", len(want), currentJobs, statuses, claimStates)
	p("lost:           %d", len(lost))
	for _, s := range firstOf(lost, 20) {
		p("                %s", s)
	}
	p("doubled:        %d; duplicate uids %d, duplicate geometries %d", len(doubled), dupUIDs, dupGeoms)
	for _, s := range firstOf(doubled, 20) {
		p("                %s", s)
	}
	p("wrong:          %d", len(wrong))
	for _, s := range firstOf(wrong, 20) {
		p("                %s", s)
	}
	p("rows:           %d parcels (%d expected), %d outside a current generation, %d admin units", totalRows, wantRows, strayRows, adminRows)
	p("claims held:    %d still CLAIMED after the drain; %d FAILED not meant to fail", heldClaims, failedGood)
	p("verify:         %s", strings.ReplaceAll(strings.TrimSpace(string(verifyOut)), "\n", "\n                "))
	dlqKeys := sortedKeys(dlq)
	p("DLQ:            %d messages for %d keys: %s (meant to fail: %s)", sumValues(dlq), len(dlq),
		strings.Join(firstOf(dlqKeys, 20), " "), strings.Join(badKeys, " "))
	t.Log(b.String())

	// The checks.
	if !drained {
		t.Errorf("the queue did not empty within %s of the chaos's end", r.cfg.drainMax)
	}
	if len(lost) > 0 {
		t.Errorf("%d keys lost their newest version: %s", len(lost), strings.Join(firstOf(lost, 5), "; "))
		r.evidence(lost)
	}
	if len(doubled) > 0 || dupUIDs != 0 || dupGeoms != 0 {
		t.Errorf("features written twice: %d keys (%s); %d duplicate uids, %d duplicate geometries",
			len(doubled), strings.Join(firstOf(doubled, 5), "; "), dupUIDs, dupGeoms)
	}
	for _, s := range firstOf(wrong, 10) {
		t.Error(s)
	}
	if strayRows != 0 || totalRows != int64(wantRows) || adminRows != 0 {
		t.Errorf("%d parcels, want %d; %d outside a current generation; %d admin units", totalRows, wantRows, strayRows, adminRows)
	}
	if currentJobs != int64(len(want)) {
		t.Errorf("%d current jobs, want one per good key: %d", currentJobs, len(want))
	}
	if heldClaims != 0 {
		t.Errorf("%d claims still CLAIMED after every message was settled: their jobs were given up", heldClaims)
	}
	if verifyErr != nil {
		t.Errorf("geoingest verify: %v\n%s", verifyErr, verifyOut)
	}
	if strings.Join(dlqKeys, ",") != strings.Join(badKeys, ",") {
		t.Errorf("the DLQ holds %d keys (%s), want exactly the objects meant to fail: %s", len(dlqKeys),
			strings.Join(firstOf(dlqKeys, 10), " "), strings.Join(badKeys, " "))
	}
	if r.hook.count() != len(r.plan)+1 {
		t.Errorf("versitygw sent %d notifications for %d uploads and its test event", r.hook.count(), len(r.plan))
	}
	for _, s := range changesWrong {
		t.Error(s)
	}
	if r.changes != nil && !r.changesDelivered {
		t.Errorf("the webhook's cursor did not pass every change record within a minute of the drain")
	}
	if r.fleet.kills == 0 || r.fleet.restarts == 0 {
		t.Errorf("no serve was killed and restarted")
	}
	r.faults.check(t)
	if failedGood != 0 {
		t.Errorf("%d claims of objects not meant to fail are FAILED: a transient fault was taken for a permanent failure", failedGood)
	}
	if stolenLogged < 1 {
		t.Errorf("no stolen lease was logged (%d steal attempts, %d claims taken)", r.steal.attempts, r.steal.took)
	}
	if r.del.sendFails > 0 {
		t.Logf("%d sends to SQS were retried", r.del.sendFails)
	}
}

// drainDLQ receives (and deletes) every message in the dead-letter queue
// and counts them by the object key their notification names. Nothing
// else writes to the queue by then: the serves have stopped.
func (r *run) drainDLQ(ctx context.Context, c *sqs.Client, url string) map[string]int {
	out := map[string]int{}
	for {
		res, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60})
		require.NoError(r.t, err)
		if len(res.Messages) == 0 {
			return out
		}
		for _, m := range res.Messages {
			key := "(unreadable)"
			if evs, err := ingests3.ParseEvents([]byte(*m.Body)); err == nil && len(evs) > 0 {
				key = evs[0].Key
			}
			out[key]++
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle})
			require.NoError(r.t, err)
		}
	}
}

// evidence logs what the serves logged about the first few lost keys.
func (r *run) evidence(lost []string) {
	for _, s := range lost[:min(3, len(lost))] {
		key := strings.Fields(s)[0]
		var lines []string
		_ = r.fleet.logLines(func(rec map[string]any, line string) {
			if strings.Contains(line, key) {
				lines = append(lines, line)
			}
		})
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		r.t.Logf("the serves' log lines about %s:\n%s", key, strings.Join(lines, "\n"))
	}
	if dir := *flagLogDir; dir != "" {
		r.t.Logf("every serve's log is in %s", dir)
	} else if names, _ := os.ReadDir(r.fleet.logDir); len(names) > 0 {
		r.t.Logf("(rerun with -chaos.logdir DIR to keep the %d serve logs)", len(names))
	}
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// firstOf returns the first n of list, and a last line saying how many
// more there are.
func firstOf(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(append([]string(nil), list[:n]...), fmt.Sprintf("... and %d more", len(list)-n))
}
