package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	sdkblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	sdkqueue "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/geoingest/geoingest/ingest/azblob"
	"github.com/geoingest/geoingest/internal/testsupport/azgrid"
	"github.com/geoingest/geoingest/internal/testsupport/faultproxy"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	azqueue "github.com/geoingest/geoingest/queue/azqueue"
	pubsubqueue "github.com/geoingest/geoingest/queue/pubsub"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

var (
	flagCloudObjects  = flag.Int("chaos.cloud-objects", 0, "good keys uploaded to each cloud by TestChaosClouds (default 40, 1000 with -chaos.long)")
	flagCloudFaults   = flag.Float64("chaos.cloud-fault-rate", 0.03, "TestChaosClouds: the probability of each fault kind on each request of the serves to the queue and to the object store")
	flagCloudDuration = flag.Duration("chaos.cloud-duration", 0, "how long TestChaosClouds' chaos lasts on each cloud (default 12s, 5m with -chaos.long)")
)

// cloudConfig is one TestChaosClouds run's shape.
type cloudConfig struct {
	duration, killEvery, drainMax time.Duration
	serves, workers               int
	spec                          planSpec
}

func newCloudConfig() cloudConfig {
	c := cloudConfig{duration: 12 * time.Second, killEvery: 2 * time.Second, drainMax: 2 * time.Minute, serves: 2, workers: 3}
	keys := 40
	if *flagLong {
		c.duration, c.drainMax, keys = 5*time.Minute, 10*time.Minute, 1000
	}
	if *flagCloudObjects > 0 {
		keys = *flagCloudObjects
	}
	if *flagCloudDuration > 0 {
		c.duration = *flagCloudDuration
	}
	large := 2 + int(c.duration/time.Minute)
	c.spec = planSpec{small: max(1, keys-large), large: large, twoVersions: keys / 5, smallMax: 150, largeN: 3000}
	return c
}

// note is one event the cloud's emulator produced for an upload (a Cloud
// Storage notification, or an Event Grid event), captured before any
// serve sees it, so that the suite delivers it 1-3 times.
type note struct {
	pubsub *pubsubpb.PubsubMessage // Cloud Storage's notification
	azure  string                  // the Event Grid event, as queued (base64)
	// other is set for an event that is not an upload's: the
	// OBJECT_ARCHIVE of a generation a later one replaced in a versioned
	// bucket (delivered too, and filtered by the trigger gate).
	other bool
}

// cloudRig is one cloud's emulators, as TestChaosClouds drives them.
type cloudRig struct {
	queueURL, dlqURL, bucket string
	env                      []string // for the serves
	// put uploads a file and returns its version token.
	put func(ctx context.Context, key string, body []byte) (string, error)
	// captured returns the events produced since the last call.
	captured func(ctx context.Context) ([]note, error)
	// send delivers one copy of an event to the serves' queue.
	send func(ctx context.Context, n note) error
	// settled reports whether every message sent to the serves' queue
	// has been acknowledged (or dead-lettered).
	settled func(ctx context.Context) (bool, error)
	// deadLetters returns the keys of the dead-letter queue's messages.
	deadLetters func(ctx context.Context) (map[string]int, error)
	// proxies are the fault proxies between the serves and the queue
	// ("queue") and the object store ("objects").
	proxies map[string]*faultproxy.Proxy
}

// cloudFaults are the fault kinds of the proxies before the serves: the
// queue's calls and the object reads fail before or after upstream acted,
// or are slow; a download is cut (reset or truncated). Stalls are left to
// TestChaos's S3 and SQS proxies.
func cloudFaults(p float64) map[string][]faultproxy.Rule {
	return map[string][]faultproxy.Rule{
		"queue": {{Kind: faultproxy.Error500, P: p}, {Kind: faultproxy.SlowDown, P: p}, {Kind: faultproxy.Reset, P: p}, {Kind: faultproxy.Latency, P: p}},
		"objects": {{Kind: faultproxy.Error500, P: p}, {Kind: faultproxy.SlowDown, P: p}, {Kind: faultproxy.Reset, P: p},
			{Kind: faultproxy.Truncate, P: p}, {Kind: faultproxy.Latency, P: p}},
	}
}

// TestChaosClouds is the chaos suite on Google Cloud's and Azure's
// emulators: on each, `geoingest serve` processes (the built binary) take
// uploads of the plan (small, large, second versions, and objects meant to
// fail) from Pub/Sub fed by fake-gcs-server's notifications, and from a
// Storage Queue fed by the Event Grid stand-in before Azurite. Every event
// is delivered 1-3 times, in shuffled order, and a random serve is
// SIGKILLed every couple of seconds (its messages come back when their ack
// deadline or visibility passes). The serves reach the queue and the
// object store through fault proxies (internal/testsupport/faultproxy: gRPC for
// Pub/Sub, HTTP for Cloud Storage, Azure's protocol for the Queue and Blob
// services): errors before and after upstream acted (a lost
// acknowledgement), latency, and cut downloads, each at
// -chaos.cloud-fault-rate a request. When the queue has settled, every key's
// newest version must be current with exactly its features (0 lost, 0
// doubled), the objects meant to fail FAILED and dead-lettered and nothing
// else, no claim held, and `geoingest verify` clean. -chaos.long (or
// -chaos.cloud-objects, -chaos.cloud-duration) is the long run.
func TestChaosClouds(t *testing.T) {
	for _, cloud := range []string{"pubsub", "azqueue"} {
		t.Run(cloud, func(t *testing.T) { chaosCloud(t, cloud) })
	}
}

func chaosCloud(t *testing.T, cloud string) {
	cfg := newCloudConfig()
	seed := *flagSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	setupStart := time.Now()
	db := pgtest.NewDB(t)
	t.Setenv("TMPDIR", t.TempDir()) // killed jobs leave their downloads behind
	const visibility = 4 * time.Second
	var rig cloudRig
	switch cloud {
	case "pubsub":
		rig = pubsubRig(t, visibility)
	case "azqueue":
		rig = azureRig(t)
	}
	for name, rules := range cloudFaults(*flagCloudFaults) {
		rig.proxies[name].SetRules(rules...)
	}
	plan := makePlan(cfg.spec, rng)
	t.Logf("chaos on %s: seed %d (rerun with -chaos.seed %d), %d uploads, %s of chaos, %d serves × %d workers, SIGKILL every %s",
		cloud, seed, seed, len(plan), cfg.duration, cfg.serves, cfg.workers, cfg.killEvery)
	logDir := *flagLogDir
	if logDir == "" {
		logDir = t.TempDir()
	}
	fl := newFleet(t, cfg.serves, logDir, rig.env, []string{
		"--queue-url", rig.queueURL, "--dlq-url", rig.dlqURL, "--database-url", db,
		"--route", "parcels/=parcels?guards=off", // a second version may shrink past the guards: here every version must land
		"--workers", strconv.Itoa(cfg.workers), "--lease", "6s", "--visibility", visibility.String(),
		"--wait", "1s", "--backoff", "1s", "--backoff-max", "4s", "--grace", "2s",
		"--log-format", "json", "--log-level", "info",
	})
	readyCtx, readyCancel := context.WithTimeout(ctx, time.Minute)
	require.NoError(t, fl.ready(readyCtx), "the serves to start")
	readyCancel()
	took := map[string]time.Duration{"setup": time.Since(setupStart)}

	start := time.Now()
	chaosCtx, stopChaos := context.WithDeadline(ctx, start.Add(cfg.duration))
	defer stopChaos()
	var (
		wg        sync.WaitGroup
		uploadErr error
		uploaded  = make(chan struct{})
	)
	wg.Add(2)
	go func() { // the uploads, over the first 65 % of the chaos
		defer wg.Done()
		defer close(uploaded)
		every := time.Duration(float64(cfg.duration) * 0.65 / float64(len(plan)))
		next := time.Now()
		for _, o := range plan {
			tok, err := rig.put(context.WithoutCancel(chaosCtx), o.key, o.body())
			if err != nil {
				uploadErr = fmt.Errorf("put %s: %w", o.key, err)
				return
			}
			o.etag = tok
			next = next.Add(every)
			select {
			case <-time.After(time.Until(next)):
			case <-chaosCtx.Done():
			}
		}
	}()
	go func() { // the kills, from 10 % of the chaos to its end
		defer wg.Done()
		krng := rand.New(rand.NewPCG(seed, 12))
		select {
		case <-time.After(cfg.duration / 10):
		case <-chaosCtx.Done():
			return
		}
		for {
			fl.killRandom(krng)
			select {
			case <-time.After(time.Duration((0.5 + krng.Float64()) * float64(cfg.killEvery))):
			case <-chaosCtx.Done():
				return
			}
		}
	}()

	// The deliveries: each captured event 1-3 times, each copy at a random
	// moment of the rest of the chaos (up to 30 % of it), in shuffled order.
	drng := rand.New(rand.NewPCG(seed, 13))
	type pending struct {
		at time.Time
		n  note
	}
	var queue []pending
	captured, others, sent := 0, 0, 0
	copies := map[int]int{}
	allUploaded := func() bool {
		select {
		case <-uploaded:
			return true
		default:
			return false
		}
	}
	for {
		notes, err := rig.captured(ctx)
		require.NoError(t, err, "the emulator's events")
		ending := chaosCtx.Err() != nil
		for _, n := range notes {
			if n.other {
				others++
			} else {
				captured++
			}
			k := 1 + drng.IntN(3)
			copies[k]++
			window := min(cfg.duration*3/10, max(0, time.Until(start.Add(cfg.duration*9/10))))
			for i := 0; i < k; i++ {
				at := time.Now()
				if window > 0 && !ending {
					at = at.Add(time.Duration(drng.Int64N(int64(window))))
				}
				queue = append(queue, pending{at, n})
			}
		}
		drng.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
		var later []pending
		for _, p := range queue {
			if !ending && p.at.After(time.Now()) {
				later = append(later, p)
				continue
			}
			require.NoError(t, rig.send(ctx, p.n), "a delivery")
			sent++
		}
		queue = later
		if ending && allUploaded() && captured >= len(plan) && len(queue) == 0 {
			break
		}
		require.Less(t, time.Since(start), cfg.duration+cfg.drainMax, "every upload's event (%d of %d captured)", captured, len(plan))
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	require.NoError(t, uploadErr)
	took["chaos"] = time.Since(start)

	// The drain: no more kills; every message must be settled, three
	// times in a row a second apart.
	drainStart := time.Now()
	drained := false
	for zeros := 0; time.Since(drainStart) < cfg.drainMax; {
		time.Sleep(time.Second)
		ok, err := rig.settled(ctx)
		require.NoError(t, err)
		if zeros = map[bool]int{true: zeros + 1, false: 0}[ok]; zeros == 3 {
			drained = true
			break
		}
	}
	took["drain"] = time.Since(drainStart)
	fl.stop()

	pool, err := pgxpool.New(ctx, db)
	require.NoError(t, err)
	defer pool.Close()
	dlq, err := rig.deadLetters(ctx)
	require.NoError(t, err)
	res := checkCloud(t, ctx, pool, db, rig.bucket, plan, dlq)
	var mult []string
	for k := 1; k <= 3; k++ {
		mult = append(mult, fmt.Sprintf("%d×%d", copies[k], k))
	}
	var faults []string
	for _, name := range sortedKeys(rig.proxies) {
		var kinds []string
		n := 0
		for k, c := range rig.proxies[name].Counts() { // "kind op"
			kinds = append(kinds, fmt.Sprintf("%s %d", k, c))
			n += c
		}
		sort.Strings(kinds)
		faults = append(faults, fmt.Sprintf("%s %d (%s)", name, n, strings.Join(kinds, ", ")))
		if n == 0 {
			t.Errorf("no fault fired on the serves' requests to the %s", name)
		}
	}
	t.Logf("faults (each kind at %g a request): %s", *flagCloudFaults, strings.Join(faults, "; "))
	t.Logf("chaos on %s: %d uploads (%d keys, %d bad); %d upload events captured (and %d others), %d deliveries (%s); %d SIGKILLs, %d restarts, %d exits not caused by the suite; "+
		"geoingest_events_received_total %g (scraped before kills and at the stop); setup %s, chaos %s, drain %s (%s)\n"+
		"found: %d keys current, lost %d, doubled %d, wrong %d; %d parcels (%d expected), %d outside a current generation; %d claims CLAIMED, %d FAILED not meant to fail; DLQ %v; verify: %s",
		cloud, len(plan), res.keys, len(res.bad), captured, others, sent, strings.Join(mult, ", "), fl.kills, fl.restarts, fl.selfExit,
		fl.metrics["geoingest_events_received_total"], took["setup"].Round(100*time.Millisecond), took["chaos"].Round(100*time.Millisecond),
		took["drain"].Round(100*time.Millisecond), map[bool]string{true: "settled", false: "DID NOT SETTLE"}[drained],
		res.current, len(res.lost), len(res.doubled), len(res.wrong), res.rows, res.wantRows, res.stray, res.held, res.failedGood, dlq,
		strings.TrimSpace(res.verify))
	if !drained {
		t.Errorf("the queue did not settle within %s of the chaos's end", cfg.drainMax)
	}
	res.check(t)
	if fl.kills == 0 || fl.restarts == 0 {
		t.Errorf("no serve was killed and restarted")
	}
	if captured != len(plan) {
		t.Errorf("%d upload events captured for %d uploads", captured, len(plan))
	}
	if t.Failed() {
		fl.logLines(func(rec map[string]any, line string) {
			if rec["level"] == "ERROR" || rec["level"] == "WARN" {
				t.Log(line)
			}
		})
	}
}

// cloudResult is what checkCloud found.
type cloudResult struct {
	keys, current                  int
	lost, doubled, wrong, bad      []string
	rows, wantRows, stray, dupUIDs int64
	held, failedGood               int64
	verify                         string
	verifyErr                      error
	dlqKeys                        []string
}

// checkCloud compares the database, the dead letters and `geoingest
// verify` with the plan: every key's newest version current with exactly
// its features, nothing else written, the bad objects FAILED and
// dead-lettered.
func checkCloud(t *testing.T, ctx context.Context, pool *pgxpool.Pool, db, bucket string, plan []*object, dlq map[string]int) cloudResult {
	var res cloudResult
	out, err := exec.Command(binary, "verify", "--database-url", db).CombinedOutput()
	res.verify, res.verifyErr = string(out), err
	newest := map[string]*object{}
	for _, o := range plan {
		if p := newest[o.key]; p == nil || o.version > p.version {
			newest[o.key] = o
		}
	}
	keys := sortedKeys(newest)
	res.keys = len(keys)
	q := func(sql string, args ...any) int64 {
		var n int64
		require.NoError(t, pool.QueryRow(ctx, sql, args...).Scan(&n), sql)
		return n
	}
	for _, k := range keys {
		o := newest[k]
		if o.bad != "" {
			res.bad = append(res.bad, k)
			var state, reason string
			err := pool.QueryRow(ctx, `SELECT state, coalesce(last_error, '') FROM claims WHERE source_bucket = $1 AND source_key = $2`, bucket, k).Scan(&state, &reason)
			if err != nil || state != "FAILED" || reason == "" {
				res.wrong = append(res.wrong, fmt.Sprintf("%s (meant to fail): claim %q, reason %q, %v", k, state, reason, err))
			}
			if n := q(`SELECT count(*) FROM jobs WHERE source_bucket = $1 AND source_key = $2 AND status = 'current'`, bucket, k); n != 0 {
				res.wrong = append(res.wrong, fmt.Sprintf("%s (meant to fail): %d current jobs", k, n))
			}
			continue
		}
		res.wantRows += int64(o.n)
		var tok string
		var ledger int64
		err := pool.QueryRow(ctx, `SELECT j.version_token, j.feature_count FROM sources s JOIN jobs j ON j.job_id = s.current_job_id
			WHERE s.source_bucket = $1 AND s.source_key = $2`, bucket, k).Scan(&tok, &ledger)
		if err != nil {
			tok = ""
		} else {
			res.current++
		}
		var rows, distinct, matched int64
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT count(p.id), count(DISTINCT p.properties->>'uid'), count(p.id) FILTER (WHERE starts_with(p.properties->>'uid', $3))
			  FROM jobs j JOIN parcels p ON p.job_ref = j.job_ref WHERE j.source_bucket = $1 AND j.source_key = $2`,
			bucket, k, fmt.Sprintf("%s#v%d#", k, o.version)).Scan(&rows, &distinct, &matched))
		switch {
		case tok != o.etag || matched < int64(o.n):
			res.lost = append(res.lost, fmt.Sprintf("%s v%d (%d features, token %s): current version %q, %d of its features present", k, o.version, o.n, o.etag, tok, matched))
		case rows > int64(o.n) || distinct < rows || ledger != int64(o.n):
			res.doubled = append(res.doubled, fmt.Sprintf("%s v%d: %d rows (%d distinct) for %d features, ledger %d", k, o.version, rows, distinct, o.n, ledger))
		}
	}
	res.rows = q(`SELECT count(*) FROM parcels`)
	res.stray = q(`SELECT count(*) FROM parcels p LEFT JOIN jobs j USING (job_ref) WHERE j.status IS DISTINCT FROM 'current'`)
	res.dupUIDs = q(`SELECT count(*) FROM (SELECT 1 FROM parcels GROUP BY properties->>'uid' HAVING count(*) > 1) d`)
	res.held = q(`SELECT count(*) FROM claims WHERE state = 'CLAIMED'`)
	res.failedGood = q(`SELECT count(*) FROM claims WHERE state = 'FAILED' AND NOT (source_key = ANY($1::text[]))`, res.bad)
	res.dlqKeys = sortedKeys(dlq)
	return res
}

func (r cloudResult) check(t *testing.T) {
	t.Helper()
	if len(r.lost) > 0 {
		t.Errorf("%d keys lost their newest version: %s", len(r.lost), strings.Join(firstOf(r.lost, 5), "; "))
	}
	if len(r.doubled) > 0 || r.dupUIDs != 0 {
		t.Errorf("features written twice: %d keys (%s); %d duplicate uids", len(r.doubled), strings.Join(firstOf(r.doubled, 5), "; "), r.dupUIDs)
	}
	for _, s := range firstOf(r.wrong, 10) {
		t.Error(s)
	}
	if r.stray != 0 || r.rows != r.wantRows {
		t.Errorf("%d parcels, want %d; %d outside a current generation", r.rows, r.wantRows, r.stray)
	}
	if r.held != 0 {
		t.Errorf("%d claims still CLAIMED after every message was settled", r.held)
	}
	if r.failedGood != 0 {
		t.Errorf("%d claims of objects not meant to fail are FAILED: a transient fault was taken for a permanent failure", r.failedGood)
	}
	if r.verifyErr != nil {
		t.Errorf("geoingest verify: %v\n%s", r.verifyErr, r.verify)
	}
	if strings.Join(r.dlqKeys, ",") != strings.Join(r.bad, ",") {
		t.Errorf("the dead-letter queue holds %v, want exactly the objects meant to fail: %v", r.dlqKeys, r.bad)
	}
}

// pubsubRig: fake-gcs-server notifies a topic of its own ("events") that
// only the suite's tap subscribes to; the suite publishes each
// notification 1-3 times to the serves' topic ("work"), whose subscription
// dead-letters to a third topic.
func pubsubRig(t *testing.T, ackDeadline time.Duration) cloudRig {
	g := testsrv.GCP(t)
	events, work, dlq := g.NewTopic(t, "chaos-events"), g.NewTopic(t, "chaos-work"), g.NewTopic(t, "chaos-dlq")
	sub := g.NewSubscription(t, work, ackDeadline, dlq)
	tap := pubsubqueue.New(g.Pubsub, g.NewSubscription(t, events, 10*time.Second, ""), pubsubqueue.Options{Wait: 200 * time.Millisecond})
	dlqSub := pubsubqueue.New(g.Pubsub, g.NewSubscription(t, dlq, 60*time.Second, ""), pubsubqueue.Options{Wait: time.Second})
	bucket := strings.ToLower(testsrv.Unique("chaos"))
	g.NewBucket(t, bucket, true, events)
	qp, err := faultproxy.NewGRPC(g.PubsubHost, faultproxy.Options{Latency: time.Second})
	require.NoError(t, err)
	t.Cleanup(qp.Close)
	op, err := faultproxy.New(g.StorageURL, faultproxy.Options{Protocol: faultproxy.S3, Latency: time.Second})
	require.NoError(t, err)
	t.Cleanup(op.Close)
	return cloudRig{
		queueURL: "pubsub://" + sub, dlqURL: "pubsub://" + dlq, bucket: bucket,
		env:     []string{"PUBSUB_EMULATOR_HOST=" + qp.Addr(), "STORAGE_EMULATOR_HOST=" + op.URL()},
		proxies: map[string]*faultproxy.Proxy{"queue": qp.Proxy, "objects": op},
		put: func(ctx context.Context, key string, body []byte) (string, error) {
			w := g.Storage.Bucket(bucket).Object(key).NewWriter(ctx)
			if _, err := w.Write(body); err != nil {
				w.Close()
				return "", err
			}
			if err := w.Close(); err != nil {
				return "", err
			}
			return strconv.FormatInt(w.Attrs().Generation, 10), nil
		},
		captured: func(ctx context.Context) ([]note, error) {
			msgs, err := tap.Receive(ctx, 100)
			if err != nil {
				return nil, err
			}
			var out []note
			for _, m := range msgs {
				data, err := pubsubqueue.Data(m)
				if err != nil {
					return nil, err
				}
				out = append(out, note{pubsub: &pubsubpb.PubsubMessage{Data: data, Attributes: m.Attributes},
					other: m.Attributes["eventType"] != "OBJECT_FINALIZE"})
				if err := tap.Ack(ctx, m); err != nil {
					return nil, err
				}
			}
			return out, nil
		},
		send: func(ctx context.Context, n note) error {
			_, err := g.Pubsub.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: work, Messages: []*pubsubpb.PubsubMessage{n.pubsub}})
			return err
		},
		settled: func(context.Context) (bool, error) {
			for _, m := range g.Published() {
				if m.Attributes["bucketId"] == bucket && m.Attributes["geoingest-reason"] == "" && m.Acks == 0 {
					return false, nil
				}
			}
			return true, nil
		},
		deadLetters: func(ctx context.Context) (map[string]int, error) {
			out := map[string]int{}
			for {
				msgs, err := dlqSub.Receive(ctx, 100)
				if err != nil || len(msgs) == 0 {
					return out, err
				}
				for _, m := range msgs {
					out[m.Attributes["objectId"]]++
					if err := dlqSub.Ack(ctx, m); err != nil {
						return nil, err
					}
				}
			}
		},
	}
}

// azureRig: uploads go through the Event Grid stand-in, which records each
// event without queueing it; the suite puts each 1-3 times on the serves'
// Storage Queue.
func azureRig(t *testing.T) cloudRig {
	az := testsrv.Azurite(t)
	q, dlq := az.NewQueue(t, "chaos"), az.NewQueue(t, "chaos-dlq")
	container := az.NewContainer(t, "chaos")
	br, err := azgrid.New(az.BlobURL, az.Blob) // no queue: the suite delivers
	require.NoError(t, err)
	proxy := httptest.NewServer(br)
	t.Cleanup(proxy.Close)
	up, err := sdkblob.NewClientFromConnectionString(strings.Replace(az.ConnectionString, az.BlobURL, proxy.URL+"/"+testsrv.AzureAccount, 1), nil)
	require.NoError(t, err)
	name := func(q *sdkqueue.QueueClient) string {
		u := strings.TrimSuffix(q.URL(), "/")
		return u[strings.LastIndex(u, "/")+1:]
	}
	seen := 0
	qp, err := faultproxy.New(strings.TrimSuffix(az.QueueURL, "/"+testsrv.AzureAccount), faultproxy.Options{Protocol: faultproxy.Azure, Latency: time.Second})
	require.NoError(t, err)
	t.Cleanup(qp.Close)
	op, err := faultproxy.New(strings.TrimSuffix(az.BlobURL, "/"+testsrv.AzureAccount), faultproxy.Options{Protocol: faultproxy.Azure, Latency: time.Second})
	require.NoError(t, err)
	t.Cleanup(op.Close)
	cs := strings.NewReplacer(az.QueueURL, qp.URL()+"/"+testsrv.AzureAccount, az.BlobURL, op.URL()+"/"+testsrv.AzureAccount).Replace(az.ConnectionString)
	return cloudRig{
		queueURL: "azqueue://" + testsrv.AzureAccount + "/" + name(q), dlqURL: "azqueue://" + testsrv.AzureAccount + "/" + name(dlq),
		bucket: container, env: []string{"AZURE_STORAGE_CONNECTION_STRING=" + cs},
		proxies: map[string]*faultproxy.Proxy{"queue": qp, "objects": op},
		put: func(ctx context.Context, key string, body []byte) (string, error) {
			resp, err := up.UploadStream(ctx, container, key, bytes.NewReader(body), nil)
			if err != nil {
				return "", err
			}
			if errs := br.Errors(); len(errs) > 0 {
				return "", fmt.Errorf("the Event Grid stand-in: %w", errs[0])
			}
			return strings.Trim(string(*resp.ETag), `"`), nil
		},
		captured: func(context.Context) ([]note, error) {
			all := br.Sent()
			var out []note
			for _, s := range all[seen:] {
				out = append(out, note{azure: s})
			}
			seen = len(all)
			return out, nil
		},
		send: func(ctx context.Context, n note) error {
			_, err := q.EnqueueMessage(ctx, n.azure, nil)
			return err
		},
		settled: func(ctx context.Context) (bool, error) {
			p, err := q.GetProperties(ctx, nil)
			if err != nil {
				return false, err
			}
			return *p.ApproximateMessagesCount == 0, nil
		},
		deadLetters: func(ctx context.Context) (map[string]int, error) {
			out := map[string]int{}
			for {
				got, err := dlq.DequeueMessages(ctx, &sdkqueue.DequeueMessagesOptions{NumberOfMessages: ptr(int32(32)), VisibilityTimeout: ptr(int32(60))})
				if err != nil || len(got.Messages) == 0 {
					return out, err
				}
				for _, m := range got.Messages {
					var b azqueue.DeadLetterBody
					key := "(unreadable)"
					if json.Unmarshal([]byte(*m.MessageText), &b) == nil {
						if evs, err := azblob.ParseEvents([]byte(b.Message)); err == nil && len(evs) > 0 {
							key = evs[0].Key
						}
					}
					out[key]++
					if _, err := dlq.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
						return nil, err
					}
				}
			}
		},
	}
}

func ptr[T any](v T) *T { return &v }
