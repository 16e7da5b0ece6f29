package chaos

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/geoingest/geoingest/internal/testsupport/hostile/corpus"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/postgistest/hatest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

var (
	flagLong       = flag.Bool("chaos.long", false, "the long run: 10,000 deliveries and 10 minutes of chaos (unless -chaos.deliveries/-chaos.duration say otherwise)")
	flagDeliveries = flag.Int("chaos.deliveries", 0, "about how many messages to deliver (default 200, 10000 with -chaos.long)")
	flagDuration   = flag.Duration("chaos.duration", 0, "how long the chaos lasts before the drain (default 30s, 10m with -chaos.long)")
	flagServes     = flag.Int("chaos.serves", 3, "geoingest serve processes")
	flagWorkers    = flag.Int("chaos.workers", 3, "--workers of each serve")
	flagSeed       = flag.Uint64("chaos.seed", 0, "random seed (0: a new one, printed)")
	flagLogDir     = flag.String("chaos.logdir", "", "keep the serve logs in this directory (default: a temporary one, removed)")
	flagPGDown     = flag.Duration("chaos.pgdown", 0, "how long PostgreSQL stays down when it is restarted (default 3s, 20s with -chaos.long)")
	flagKillEvery  = flag.Duration("chaos.kill-every", 3*time.Second, "mean time between SIGKILLs")
	flagLargeN     = flag.Int("chaos.large-features", 6000, "features of the largest large object (they have half to all of it)")
	flagStealN     = flag.Int("chaos.steal-features", 100000, "features of each steal target: enough that its write outlasts the stealer's expire-and-redeliver (about a second), however fast the write path")
)

// config is one run's shape.
type config struct {
	deliveries                  int
	duration, pgDown, killEvery time.Duration
	outage                      time.Duration // of the S3 server, and of the SQS server
	outageAt                    [2]float64    // when the S3 and the SQS outages begin (fractions of the chaos)
	serves, workers             int
	spec                        planSpec
	stealWant                   int // stolen leases to force (at least)
	drainMax                    time.Duration
	lease, visibility           time.Duration
	failovers                   int // of a pg_auto_failover pair, instead of the PostgreSQL restart
}

func newConfig() config {
	c := config{deliveries: 200, duration: 30 * time.Second, pgDown: 3 * time.Second, outage: 8 * time.Second, outageAt: [2]float64{0.15, 0.70}, stealWant: 1, drainMax: 3 * time.Minute}
	if *flagLong {
		c = config{deliveries: 10000, duration: 10 * time.Minute, pgDown: 20 * time.Second, outage: 30 * time.Second, outageAt: [2]float64{0.35, 0.75}, stealWant: 5, drainMax: 15 * time.Minute}
	}
	if *flagOutage > 0 {
		c.outage = *flagOutage
	}
	if *flagDeliveries > 0 {
		c.deliveries = *flagDeliveries
	}
	if *flagDuration > 0 {
		c.duration = *flagDuration
	}
	if *flagPGDown > 0 {
		c.pgDown = *flagPGDown
	}
	c.serves, c.workers, c.killEvery = *flagServes, *flagWorkers, *flagKillEvery
	c.failovers = failoverCount()
	c.lease, c.visibility = 6*time.Second, 4*time.Second
	// Every notification is delivered twice on average: about
	// deliveries/2 uploads (and versitygw's test event). A fifth of the
	// keys get a second version.
	minutes := int(c.duration / time.Minute)
	c.spec = planSpec{large: 3 + minutes, steal: c.stealWant + 2, smallMax: 150, largeN: *flagLargeN, stealN: *flagStealN}
	events := (c.deliveries*105/100)/2 - 1 - 3 - len(hostileCases) - c.spec.steal // less the test event, the bad and hostile objects and the steal targets
	keys := max(events*10/12, c.spec.large+1)
	c.spec.small = keys - c.spec.large
	c.spec.twoVersions = events - keys
	return c
}

// TestChaos is the chaos suite (see the package comment). The default run
// takes about a minute; -chaos.long is the long run of docs/chaos.md.
func TestChaos(t *testing.T) {
	cfg := newConfig()
	seed := *flagSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("chaos: seed %d (rerun with -chaos.seed %d), %d deliveries planned, %s of chaos, %d serves × %d workers, lease %s, visibility %s, S3 and SQS outages of %s, fault rate %g",
		seed, seed, cfg.deliveries, cfg.duration, cfg.serves, cfg.workers, cfg.lease, cfg.visibility, cfg.outage, *flagFaultRate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	setupStart := time.Now()

	// The servers.
	var ha *hatest.Cluster
	var db string
	if cfg.failovers > 0 {
		ha, db = failoverDB(t)
	} else {
		db = pgtest.NewDB(t)
	}
	sq := testsrv.SQS(t)
	qURL := sq.NewQueue(t, "chaos", cfg.visibility)
	dlqURL := sq.NewQueue(t, "chaos-dlq", cfg.visibility)
	hook := newWebhook(t)
	changes := newChangeHook(t, seed)
	st := testsrv.Versitygw(t, hook.url)
	testsrv.Env(t, sq.URL, st.URL)
	t.Setenv("TMPDIR", t.TempDir()) // killed jobs leave their downloads behind
	const bucket = "uploads"
	st.NewBucket(t, bucket, true)
	fx := newFaults(t, st.URL, sq.URL, seed, cfg.outage)
	pool, err := pgxpool.New(ctx, db)
	require.NoError(t, err)
	defer pool.Close()

	plan := makePlan(cfg.spec, rng)
	// The hostile-upload fault: uploads that name the listener, swell
	// or spin GDAL, among the others; each must fail within the read
	// limits below, as a bad object, and the listener receive nothing.
	ln, err := corpus.Listen()
	require.NoError(t, err)
	defer ln.Close()
	plan = addHostile(t, plan, rng, ln.Addr())
	logDir := *flagLogDir
	if logDir == "" {
		logDir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(logDir, 0o755))
	fl := newFleet(t, cfg.serves, logDir, append(fx.env(), "GEOINGEST_OWN_PARTITION_BYTES="+ownPartitionBytes), append(append([]string{
		"--queue-url", qURL, "--dlq-url", dlqURL, "--database-url", db,
		// A version's feature count is drawn at random, so a later one can
		// shrink past the guards' threshold; the guards are tested on their own
		// (ingest/postgis/pending_test.go), and here every version must land.
		"--route", "parcels/=parcels?guards=off", "--route", "admin/=admin_units",
		"--workers", strconv.Itoa(cfg.workers), "--lease", cfg.lease.String(), "--visibility", cfg.visibility.String(),
		"--wait", "1s", "--backoff", "1s", "--backoff-max", "4s", "--grace", "2s",
		"--read-timeout", "5s", "--read-cpu", "3s",
		"--webhook", changes.url,
		"--log-format", "json", "--log-level", "info",
	}, faultServeArgs...), compactArgs...))
	readyCtx, readyCancel := context.WithTimeout(ctx, time.Minute)
	require.NoError(t, fl.ready(readyCtx), "the serves to start")
	readyCancel()

	del := newDeliverer(sq.Client, qURL, rand.New(rand.NewPCG(seed, 2)))
	sl := &stealer{pool: pool, fleet: fl, del: del, bucket: bucket}
	r := &run{cfg: cfg, t: t, plan: plan, start: time.Now(), hook: hook, changes: changes, del: del, steal: sl, fleet: fl,
		uploadsDone: make(chan struct{}), db: db, faults: fx, ha: ha}
	r.took.setup = time.Since(setupStart)

	var wg sync.WaitGroup
	chaosCtx, stopChaos := context.WithDeadline(ctx, r.start.Add(cfg.duration))
	defer stopChaos()
	wg.Add(6)
	go func() { defer wg.Done(); r.compactFaults(chaosCtx) }()
	go func() { defer wg.Done(); r.upload(chaosCtx, st.Client, bucket) }()
	go func() { defer wg.Done(); r.deliver(chaosCtx) }()
	go func() { defer wg.Done(); r.kill(chaosCtx, rand.New(rand.NewPCG(seed, 3))) }()
	go func() {
		defer wg.Done()
		if ha != nil {
			r.failovers(chaosCtx)
		} else {
			r.restartPG(chaosCtx)
		}
	}()
	go func() { defer wg.Done(); r.runFaults(chaosCtx) }()
	wg.Wait()
	chaosEnd := time.Now()
	r.took.chaos = chaosEnd.Sub(r.start)
	require.Empty(t, hook.failures(), "versitygw's notifications")
	require.NoError(t, r.uploadErr, "uploads")
	require.NoError(t, r.deliverErr, "deliveries")
	require.NoError(t, r.pgErr, "PostgreSQL restart or failovers")
	require.NoError(t, r.compactErr, "the compaction fault")

	// The drain: no more kills; the queue must empty.
	drained := r.drain(ctx, sq.Client, qURL)
	if ha != nil && *flagAsync && drained {
		drained = r.asyncRepair(ctx, pool, sq.Client, qURL)
	}
	r.took.drain = time.Since(chaosEnd)
	changesStart := time.Now()
	r.changesDelivered = awaitChanges(ctx, pool, time.Minute)
	r.took.changes = time.Since(changesStart)
	stopStart := time.Now()
	fl.stop()
	r.took.stop = time.Since(stopStart)
	r.report(ctx, pool, db, sq.Client, dlqURL, drained)
	require.Empty(t, ln.Hits(), "connections to the address the hostile uploads name")
}

// run is one chaos run's state.
type run struct {
	cfg    config
	t      *testing.T
	plan   []*object
	start  time.Time
	hook   *webhook
	del    *deliverer
	steal  *stealer
	fleet  *fleet
	faults *faults

	uploadsDone                  chan struct{} // closed when upload returns
	pgMu                         sync.Mutex    // held by a steal, and by the PostgreSQL restart
	uploadErr, deliverErr, pgErr error
	compactErr                   error
	foldKills                    atomic.Int64 // compactors SIGKILLed mid-fold
	uploaded                     atomic.Int64
	pgRestartAt                  time.Duration
	pgRestartTook                time.Duration
	pgOutageOnly                 bool            // the server could not be restarted: an outage of the database instead
	db                           string          // the suite's database
	ha                           *hatest.Cluster // the formation of a run with failovers, else nil
	fo                           []failover      // the failovers done
	asyncNotes                   []string        // what an asynchronous standby's failovers lost, and its repair (report lines)
	took                         struct{ setup, chaos, drain, changes, stop time.Duration }
	changes                      *changeHook
	changesDelivered             bool
}

// at is the moment a fraction of the chaos has passed.
func (r *run) at(frac float64) time.Time {
	return r.start.Add(time.Duration(frac * float64(r.cfg.duration)))
}

// upload PUTs the plan's objects in order, spread over the first 65 % of
// the chaos (on a slow machine it may run late: every object is uploaded
// all the same).
func (r *run) upload(ctx context.Context, c *s3.Client, bucket string) {
	defer close(r.uploadsDone)
	every := time.Duration(float64(r.cfg.duration) * 0.65 / float64(len(r.plan)))
	next := time.Now()
	for _, o := range r.plan {
		body := o.body()
		out, err := c.PutObject(context.WithoutCancel(ctx), &s3.PutObjectInput{Bucket: &bucket, Key: &o.key, Body: bytes.NewReader(body)})
		if err != nil {
			r.uploadErr = fmt.Errorf("put %s: %w", o.key, err)
			return
		}
		o.etag = strings.Trim(aws.ToString(out.ETag), `"`)
		r.uploaded.Add(1)
		next = next.Add(every)
		select {
		case <-time.After(time.Until(next)):
		case <-ctx.Done():
		}
	}
}

// deliver hands captured notifications to the deliverer (steal targets to
// the stealer) and sends due copies until the chaos ends, then every
// notification still to come and every copy still pending.
func (r *run) deliver(ctx context.Context) {
	seen := 0
	var targets []notification
	stealing := make(chan struct{}, 1)
	stealing <- struct{}{}
	var stealWG sync.WaitGroup
	stealAfter := r.at(0.1)
	window := func() time.Duration { // copies are sent by 90 % of the chaos
		w := time.Until(r.at(0.9))
		return max(0, min(w, r.cfg.duration*3/10))
	}
	isTarget := map[string]bool{}
	for _, o := range r.plan {
		if o.steal {
			isTarget[o.key] = true
		}
	}
	for {
		done := ctx.Err() != nil
		if done {
			// Wait for the last uploads and their notifications
			// (versitygw sends them asynchronously).
			<-r.uploadsDone
			for deadline := time.Now().Add(30 * time.Second); int64(r.hook.count()) < r.uploaded.Load()+1 && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
			}
		}
		for _, n := range r.hook.since(seen) {
			seen++
			if isTarget[n.key] {
				targets = append(targets, n)
				continue
			}
			r.del.schedule(n, window(), 0)
		}
		// One steal at a time, after the kills have begun, until as many
		// as wanted have succeeded or the targets run out (after the
		// chaos too, without kills then). A steal and the PostgreSQL
		// restart do not overlap: the restart would end both workers'
		// transactions.
		if len(targets) > 0 && time.Now().After(stealAfter) && int(r.steal.stolen.Load()) < r.cfg.stealWant {
			select {
			case <-stealing:
				n := targets[0]
				targets = targets[1:]
				stealWG.Add(1)
				go func() {
					defer stealWG.Done()
					r.pgMu.Lock()
					r.faults.hold()
					sent := r.steal.steal(context.WithoutCancel(ctx), n)
					r.faults.release()
					r.pgMu.Unlock()
					r.del.schedule(n, window(), sent)
					stealing <- struct{}{}
				}()
			default:
			}
		}
		if int(r.steal.stolen.Load()) >= r.cfg.stealWant {
			for _, n := range targets {
				r.del.schedule(n, window(), 0)
			}
			targets = nil
		}
		if done && len(targets) == 0 {
			stealWG.Wait()
			for _, n := range r.hook.since(seen) {
				seen++
				r.del.schedule(n, 0, 0)
			}
			r.deliverErr = r.del.sendDue(context.Background(), true)
			return
		}
		if err := r.del.sendDue(ctx, false); err != nil && ctx.Err() == nil {
			r.deliverErr = err
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill SIGKILLs a random serve every killEvery on average (0.5 to 1.5
// times it) from 5 % of the chaos to its end; the fleet restarts it.
func (r *run) kill(ctx context.Context, rng *rand.Rand) {
	select {
	case <-time.After(time.Until(r.at(0.05))):
	case <-ctx.Done():
		return
	}
	for {
		r.fleet.killRandom(rng)
		d := time.Duration((0.5 + rng.Float64()) * float64(r.cfg.killEvery))
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return
		}
	}
}

// restartPG restarts PostgreSQL once, half-way through the chaos (later
// if a steal is in progress then). When the test server is not pgtest's
// private cluster (TEST_DATABASE_URL, a container), which cannot be
// restarted without disturbing others, it stages an outage of the suite's
// database instead, and says so.
func (r *run) restartPG(ctx context.Context) {
	select {
	case <-time.After(time.Until(r.at(0.5))):
	case <-ctx.Done():
		r.pgErr = fmt.Errorf("the chaos ended before PostgreSQL was restarted")
		return
	}
	r.pgMu.Lock()
	defer r.pgMu.Unlock()
	ctx = context.WithoutCancel(ctx)
	r.pgRestartAt = time.Since(r.start)
	t0 := time.Now()
	r.pgErr = pgtest.Restart(ctx, r.t, r.cfg.pgDown)
	if errors.Is(r.pgErr, pgtest.ErrCannotRestart) {
		r.pgOutageOnly = true
		r.pgErr = pgtest.Outage(ctx, r.t, r.db, r.cfg.pgDown)
	}
	r.pgRestartTook = time.Since(t0)
}

// drain waits until every message has been settled: the queue holds
// nothing, visible, in flight or delayed, three times in a row a second
// apart. It reports whether that happened within drainMax.
func (r *run) drain(ctx context.Context, c *sqs.Client, queueURL string) bool {
	dctx, cancel := context.WithTimeout(ctx, r.cfg.drainMax)
	defer cancel()
	zeros := 0
	for zeros < 3 {
		select {
		case <-dctx.Done():
			return false
		case <-time.After(time.Second):
		}
		if n, err := depth(dctx, c, queueURL); err == nil && n == 0 {
			zeros++
		} else {
			zeros = 0
		}
	}
	return true
}

// depth is how many messages a queue holds: visible, in flight or
// delayed.
func depth(ctx context.Context, c *sqs.Client, queueURL string) (int, error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &queueURL,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range out.Attributes {
		i, err := strconv.Atoi(v)
		if err != nil {
			return 0, err
		}
		n += i
	}
	return n, nil
}
