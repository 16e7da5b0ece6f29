package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testhook"
	"github.com/geoingest/geoingest/queue"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

func init() {
	register(&command{name: "serve", summary: "consume bucket events (SQS) or a local inbox and ingest them", run: runServe})
}

// Default routes. In an inbox every file outside admin/ goes to parcels,
// files directly in the directory included.
var (
	defaultQueueRoutes = []string{"parcels/=parcels", "admin/=admin_units"}
	defaultInboxRoutes = []string{"admin/=admin_units", "=parcels"}
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// serveConfig is serve's configuration.
type serveConfig struct {
	queueURL, dlqURL, inbox, metricsAddr, pipelineVersion string
	workers, maxReceives                                  int
	routes                                                listFlag
	visibility, grace, backoffBase, backoffMax, lease     time.Duration
	wait, poll                                            time.Duration
	s3PathStyle                                           string
	// untilIdle, when positive, stops serve once nothing has been received
	// and no job has run for this long (batch runs, the demo).
	untilIdle time.Duration
	// reportRefresh is how often serve stores the report assignments that
	// are missing (see ingest.Store.RefreshReports); 0 turns it off.
	reportRefresh time.Duration
}

// envInt returns the environment variable's value as an int, or def when
// it is unset. A value that does not parse is recorded for envError, and
// def returned meanwhile.
func (m *Main) envInt(name string, def int) int {
	raw := m.Getenv(name)
	if raw == "" {
		return def
	}
	v, err := strconv.Atoi(raw)
	if err != nil {
		m.envErrs = append(m.envErrs, fmt.Errorf("environment variable %s=%q: not a whole number", name, raw))
		return def
	}
	return v
}

// envDuration is envInt for a duration such as 30s or 5m.
func (m *Main) envDuration(name string, def time.Duration) time.Duration {
	raw := m.Getenv(name)
	if raw == "" {
		return def
	}
	v, err := time.ParseDuration(raw)
	if err != nil {
		m.envErrs = append(m.envErrs, fmt.Errorf("environment variable %s=%q: not a duration (for example 30s, 5m)", name, raw))
		return def
	}
	return v
}

// envError returns the environment values that did not parse, if any: a
// command stops on them rather than run with a default the user did not
// ask for.
func (m *Main) envError() error {
	return errors.Join(m.envErrs...)
}

// runServe consumes events until ctx is cancelled (SIGTERM, SIGINT), then
// stops receiving, lets in-flight jobs finish within --grace, cancels the
// rest (nothing of theirs is committed, their claims are released) and
// makes their messages visible again. It returns nil after a clean
// shutdown.
func runServe(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("serve", "[--queue-url URL | --inbox DIR] [flags]")
	var d dbFlags
	m.addDBFlagsLevel(fs, &d, "info")
	var c serveConfig
	fs.StringVar(&c.queueURL, "queue-url", m.Getenv("GEOINGEST_QUEUE_URL"), "SQS queue of bucket event notifications (env GEOINGEST_QUEUE_URL); endpoint, region and credentials from the AWS environment (AWS_ENDPOINT_URL_SQS, AWS_REGION, ...)")
	fs.StringVar(&c.dlqURL, "dlq-url", m.Getenv("GEOINGEST_DLQ_URL"), "SQS dead-letter queue for permanently failed messages, with the reason in the "+queue.ReasonAttribute+" attribute (env GEOINGEST_DLQ_URL)")
	fs.StringVar(&c.inbox, "inbox", m.Getenv("GEOINGEST_INBOX"), "local inbox directory, the default when no queue URL is given (env GEOINGEST_INBOX; default $GEOINGEST_HOME/inbox or ./inbox)")
	fs.IntVar(&c.workers, "workers", m.envInt("GEOINGEST_WORKERS", 4), "concurrent jobs (env GEOINGEST_WORKERS)")
	fs.Var(&c.routes, "route", "PREFIX=TARGET or BUCKET:PREFIX=TARGET, repeatable; longest prefix wins (env GEOINGEST_ROUTES, comma-separated; default parcels/=parcels,admin/=admin_units, for an inbox admin/=admin_units,=parcels)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", m.envDefault("GEOINGEST_METRICS_ADDR", "127.0.0.1:9464"), "address of /metrics, /healthz and /readyz; empty for none (env GEOINGEST_METRICS_ADDR)")
	fs.DurationVar(&c.visibility, "visibility", m.envDuration("GEOINGEST_VISIBILITY", 60*time.Second), "SQS visibility timeout asked for on receive and renewed every third of it while a job runs (env GEOINGEST_VISIBILITY)")
	fs.IntVar(&c.maxReceives, "max-receives", m.envInt("GEOINGEST_MAX_RECEIVES", 5), "patience for an incomplete shapefile set: on this receive it is failed and dead-lettered (env GEOINGEST_MAX_RECEIVES)")
	fs.DurationVar(&c.grace, "grace", m.envDuration("GEOINGEST_GRACE", 30*time.Second), "on SIGTERM, how long in-flight jobs may run before they are cancelled and their messages given back (env GEOINGEST_GRACE)")
	fs.DurationVar(&c.backoffBase, "backoff", m.envDuration("GEOINGEST_BACKOFF", 5*time.Second), "first retry delay after a transient failure, doubled per receive (env GEOINGEST_BACKOFF)")
	fs.DurationVar(&c.backoffMax, "backoff-max", m.envDuration("GEOINGEST_BACKOFF_MAX", 15*time.Minute), "longest retry delay (env GEOINGEST_BACKOFF_MAX)")
	fs.DurationVar(&c.lease, "lease", m.envDuration("GEOINGEST_LEASE", 5*time.Minute), "claim lease; heartbeats extend it every lease/3 (env GEOINGEST_LEASE)")
	fs.DurationVar(&c.wait, "wait", m.envDuration("GEOINGEST_WAIT", 20*time.Second), "SQS long-poll wait, at most 20s (env GEOINGEST_WAIT)")
	fs.DurationVar(&c.poll, "poll", m.envDuration("GEOINGEST_POLL", 500*time.Millisecond), "inbox scan interval (env GEOINGEST_POLL)")
	fs.StringVar(&c.pipelineVersion, "pipeline-version", m.envDefault("GEOINGEST_PIPELINE_VERSION", ingest.DefaultPipelineVersion), "pipeline version of the jobs (env GEOINGEST_PIPELINE_VERSION)")
	fs.StringVar(&c.s3PathStyle, "s3-path-style", m.envDefault("GEOINGEST_S3_PATH_STYLE", "auto"), "path-style S3 requests: true, false, or auto (true when AWS_ENDPOINT_URL_S3 is set)")
	fs.DurationVar(&c.reportRefresh, "report-refresh", m.envDuration("GEOINGEST_REPORT_REFRESH", time.Minute), "report assignments are stored in the background after each committed job and at least this often (catching a worker killed between a commit and its refresh); 0: each job stores its own before its ack (env GEOINGEST_REPORT_REFRESH)")
	fs.DurationVar(&c.untilIdle, "until-idle", 0, "exit once nothing was received and no job ran for this long, and no message given back for a held claim is due (0: serve until SIGTERM)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := m.envError(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	if err := m.setupLog(&d); err != nil {
		return err
	}
	if c.workers < 1 {
		return fmt.Errorf("--workers must be at least 1")
	}
	if c.queueURL != "" && c.inbox != "" {
		return fmt.Errorf("give --queue-url or --inbox, not both")
	}
	specs := []string(c.routes)
	if len(specs) == 0 && m.Getenv("GEOINGEST_ROUTES") != "" {
		specs = []string{m.Getenv("GEOINGEST_ROUTES")}
	}
	if len(specs) == 0 {
		specs = defaultQueueRoutes
		if c.queueURL == "" {
			specs = defaultInboxRoutes
		}
	}
	routes, err := ingest.ParseRoutes(specs)
	if err != nil {
		return err
	}
	for _, r := range routes {
		if err := paramsFor(r, c.pipelineVersion).Validate(); err != nil {
			return err
		}
	}

	s := &server{cfg: c, log: m.Log, router: ingest.NewRouter(routes, nil)}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = ingest.NewMetrics(reg)

	if c.queueURL != "" {
		awsCfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return fmt.Errorf("aws config: %w", err)
		}
		s.s3 = newS3Client(awsCfg, c.s3PathStyle)
		s.recv = queue.NewSQS(sqs.NewFromConfig(awsCfg), c.queueURL,
			queue.SQSOptions{Wait: c.wait, Visibility: c.visibility, DeadLetterURL: c.dlqURL})
		s.extend = true
	} else {
		dir := c.inbox
		if dir == "" {
			dir = "inbox"
			if h := m.Getenv("GEOINGEST_HOME"); h != "" {
				dir = filepath.Join(h, "inbox")
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		box, err := queue.NewInbox(dir, queue.InboxOptions{Poll: c.poll})
		if err != nil {
			return err
		}
		s.recv, s.inbox = box, box.Dir()
	}
	defer s.recv.Close()

	d.workers = c.workers
	pool, err := m.openDB(ctx, &d)
	if err != nil {
		return err
	}
	defer pool.Close()
	store := ingest.NewStore(pool, s.metrics, m.Log)
	store.BeforeCommit = func(string) { testhook.At(testhook.BeforeCommit) }
	s.svc = ingest.NewService(store, s.metrics, m.Log)
	s.svc.Lease = c.lease
	// The report assignments are stored by refreshReports in the
	// background, not by each job before its message is acked.
	s.svc.NoReportRefresh = c.reportRefresh > 0
	s.refreshKick = make(chan struct{}, 1)

	if c.metricsAddr != "" {
		ops, err := startOps(c.metricsAddr, reg, func(ctx context.Context) error {
			if s.stopping.Load() {
				return errors.New("shutting down")
			}
			if err := pool.Ping(ctx); err != nil {
				// Jobs fail as transient and are retried until it is back.
				return fmt.Errorf("database unavailable: %w", err)
			}
			return nil
		}, m.Log)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer ops.Close()
	}
	source := "inbox " + s.inbox
	if c.queueURL != "" {
		source = "queue " + c.queueURL
	}
	m.Log.Info("serving", "from", source, "workers", c.workers, "routes", fmt.Sprint(s.router.Routes()))
	rctx, stopRefresh := context.WithCancel(ctx)
	refreshed := make(chan struct{})
	go func() { defer close(refreshed); s.refreshReports(rctx) }()
	s.run(ctx)
	stopRefresh()
	<-refreshed
	if c.untilIdle > 0 && c.reportRefresh > 0 && ctx.Err() == nil {
		// A batch run leaves every assignment stored.
		if _, err := s.svc.Store.RefreshReports(ctx); err != nil {
			m.Log.Warn("report refresh failed; reports compute what is missing until the next one", "error", err.Error())
		}
	}
	m.Log.Info("stopped")
	fmt.Fprintln(m.Stdout, s.summary())
	return nil
}

// summary tells what this run of serve did, from its metrics.
func (s *server) summary() string {
	m := s.metrics
	v := func(c prometheus.Collector) int64 {
		ch := make(chan prometheus.Metric, 64)
		go func() { c.Collect(ch); close(ch) }()
		var sum float64
		for metric := range ch {
			var d dto.Metric
			if metric.Write(&d) == nil {
				sum += d.GetCounter().GetValue()
			}
		}
		return int64(sum)
	}
	return fmt.Sprintf("serve: %d events: %d written, %d duplicates stopped at the claim gate, %d at the write gate, %d superseded, %d held elsewhere (given back until the lease ended), %d failed, %d filtered, %d dead-lettered",
		v(m.EventsReceived), v(m.WriteGate.WithLabelValues("written")), v(m.Claims.WithLabelValues("duplicate")),
		v(m.WriteGate.WithLabelValues("already_present")), v(m.WriteGate.WithLabelValues("superseded")),
		v(m.Claims.WithLabelValues("held")), v(m.JobsFailed.WithLabelValues("permanent")), v(m.EventsFiltered), v(m.DeadLettered))
}

// paramsFor is the parameters of a job on route: the defaults, the
// pipeline version, and the route's options.
func paramsFor(route ingest.Route, pipelineVersion string) ingest.Params {
	p := ingest.DefaultParams(route.Target)
	p.PipelineVersion = pipelineVersion
	return route.Params(p)
}

// server is one running `geoingest serve`.
type server struct {
	cfg      serveConfig
	log      *slog.Logger
	router   *ingest.Router
	metrics  *ingest.Metrics
	svc      *ingest.Service
	recv     queue.Receiver
	s3       *s3.Client
	inbox    string // the inbox directory, "" for SQS
	extend   bool   // the receiver has a visibility timeout to extend
	stopping atomic.Bool
	// heldUntil (unix nanos) is when the last message given back for a
	// held claim comes back: --until-idle waits for it.
	heldUntil atomic.Int64
	// refreshKick asks refreshReports to run soon (a job was committed).
	refreshKick chan struct{}
	// preclaimed holds claims taken for a received batch (see preclaim):
	// job id -> ingest.ClaimResult, taken by runJob.
	preclaimed sync.Map
}

// noteHeld records that a message given back for a held claim comes back
// after delay.
func (s *server) noteHeld(delay time.Duration) {
	t := time.Now().Add(delay).UnixNano()
	for {
		cur := s.heldUntil.Load()
		if cur >= t || s.heldUntil.CompareAndSwap(cur, t) {
			return
		}
	}
}

// run receives and dispatches messages to at most cfg.workers concurrent
// handlers until ctx is done, then shuts down gracefully.
func (s *server) run(ctx context.Context) {
	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	sem := make(chan struct{}, s.cfg.workers)
	var wg sync.WaitGroup
	var lastBusy atomic.Int64 // unix nanos of the last receive or job end
	lastBusy.Store(time.Now().UnixNano())
receive:
	for ctx.Err() == nil {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break receive
		}
		n := 1
	more:
		for n < queue.MaxBatch {
			select {
			case sem <- struct{}{}:
				n++
			default:
				break more
			}
		}
		msgs, err := s.recv.Receive(ctx, n)
		for i := len(msgs); i < n; i++ {
			<-sem
		}
		if len(msgs) > 0 {
			lastBusy.Store(time.Now().UnixNano())
		} else if err == nil && s.cfg.untilIdle > 0 && len(sem) == 0 &&
			time.Since(time.Unix(0, lastBusy.Load())) >= s.cfg.untilIdle &&
			time.Since(time.Unix(0, s.heldUntil.Load())) >= s.cfg.untilIdle {
			s.log.Info("idle: stopping", "idle_for", s.cfg.untilIdle.String())
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.log.Warn("receive failed; retrying", "error", err.Error())
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			continue
		}
		s.preclaim(jobCtx, msgs)
		for _, msg := range msgs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				defer func() { lastBusy.Store(time.Now().UnixNano()) }()
				s.handle(jobCtx, msg)
			}()
		}
	}

	s.stopping.Store(true)
	s.log.Info("shutting down: no longer receiving; waiting for jobs in flight", "grace", s.cfg.grace.String())
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.cfg.grace):
		s.log.Warn("grace period over: cancelling jobs in flight; their messages are given back")
		cancelJobs()
		<-done
	}
}

// verdict is what becomes of a message.
type verdict struct {
	retry   bool          // nack with backoff (a transient failure)
	held    time.Duration // a claim is held elsewhere: nack, visible again no sooner than this
	reasons []string      // permanent failures: dead-letter with these
}

// handle processes one message and acks, nacks or dead-letters it.
func (s *server) handle(ctx context.Context, msg *queue.Message) {
	stopExtend := s.keepInvisible(ctx, msg)
	v := s.process(ctx, msg)
	stopExtend()
	log := s.log.With("message", msg.ID, "receive_count", msg.ReceiveCount)

	// Settle with a context of its own: on shutdown the message must
	// still be given back.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	switch {
	case v.retry || v.held > 0:
		var delay time.Duration
		if v.retry && ctx.Err() == nil { // shutting down: let another worker have it at once
			delay = s.backoff(msg.ReceiveCount)
		}
		// A held claim's job is not done and its worker may be dead: the
		// message comes back when the lease has ended, to take it over.
		delay = max(delay, v.held)
		if v.held > 0 {
			s.noteHeld(delay)
		}
		if err := s.recv.Nack(sctx, msg, delay); err != nil {
			log.Warn("nack failed; the message comes back after its visibility timeout", "error", err.Error())
		} else if v.held > 0 && !v.retry {
			log.Info("message given back: its job is in progress elsewhere; it comes back when that lease has ended", "delay", delay.String())
		} else {
			log.Info("message given back for retry", "delay", delay.String())
		}
	case len(v.reasons) > 0:
		reason := strings.Join(v.reasons, "; ")
		err := s.recv.DeadLetter(sctx, msg, reason)
		switch {
		case errors.Is(err, queue.ErrNoDeadLetterQueue):
			// The failure is recorded FAILED with its reason; without a
			// DLQ, deleting is all that stops an endless retry.
			log.Error("permanent failure and no dead-letter queue: message deleted; the job is recorded FAILED", "reason", reason)
			if err := s.recv.Ack(sctx, msg); err != nil {
				log.Warn("ack failed", "error", err.Error())
			}
		case err != nil:
			log.Error("dead-letter failed; the message comes back", "error", err.Error())
		default:
			s.metrics.DeadLettered.Inc()
			log.Error("message dead-lettered", "reason", reason)
		}
	default:
		testhook.At(testhook.BeforeAck)
		if err := s.recv.Ack(sctx, msg); err != nil {
			log.Warn("ack failed; the message comes back and is a duplicate", "error", err.Error())
		}
		testhook.At(testhook.AfterAck)
	}
}

// backoff is the nack delay after the n-th receive.
func (s *server) backoff(n int) time.Duration {
	d := s.cfg.backoffBase
	for i := 1; i < n && d < s.cfg.backoffMax; i++ {
		d *= 2
	}
	if d > s.cfg.backoffMax {
		d = s.cfg.backoffMax
	}
	return d
}

// keepInvisible renews msg's visibility every third of the visibility
// timeout until the returned func is called.
func (s *server) keepInvisible(ctx context.Context, msg *queue.Message) func() {
	if !s.extend || s.cfg.visibility <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.cfg.visibility / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := s.recv.Extend(ctx, msg, s.cfg.visibility); err != nil {
					if ctx.Err() == nil {
						s.log.Warn("extend visibility", "message", msg.ID, "error", err.Error())
					}
					continue
				}
				s.metrics.VisibilityExtensions.Inc()
			}
		}
	}()
	return func() { cancel(); <-done }
}

// process runs every event of msg through the three gates.
func (s *server) process(ctx context.Context, msg *queue.Message) verdict {
	if s.inbox != "" {
		return s.processFile(ctx, msg)
	}
	evs, err := ingest.ParseEvents(msg.Body)
	if err != nil {
		s.metrics.EventsReceived.Inc()
		s.log.Error("unreadable message", "message", msg.ID, "error", err.Error())
		return verdict{reasons: []string{err.Error()}}
	}
	var v verdict
	for _, ev := range evs {
		s.metrics.EventsReceived.Inc()
		route, reason, ok := s.router.Route(ev)
		if !ok {
			s.filtered(ev, reason)
			continue
		}
		if ev.Removed() {
			s.runDelete(ctx, &v, ev, route)
			continue
		}
		src, fetcher, err := ingest.NewS3Source(ctx, s.s3, ev, ingest.S3Options{FinalAttempt: msg.ReceiveCount >= s.cfg.maxReceives})
		if err != nil {
			s.failed(ctx, &v, ev.String(), err)
			continue
		}
		s.runJob(ctx, &v, src, fetcher, route)
	}
	return v
}

// processFile handles an inbox message: one local file, routed by its
// path relative to the inbox.
func (s *server) processFile(ctx context.Context, msg *queue.Message) verdict {
	p, rel := string(msg.Body), msg.Attributes["rel"]
	s.metrics.EventsReceived.Inc()
	st, err := os.Stat(p)
	if err != nil {
		s.filtered(ingest.Event{Key: rel}, "vanished")
		return verdict{}
	}
	ev := ingest.Event{Name: "ObjectCreated:Put", Bucket: ingest.LocalBucket, Key: rel, RawKey: rel, Size: st.Size()}
	route, reason, ok := s.router.Route(ev)
	if !ok {
		s.filtered(ev, reason)
		return verdict{}
	}
	var v verdict
	if strings.EqualFold(path.Ext(rel), ".shp") {
		if missing := missingSidecars(p); len(missing) > 0 {
			err := fmt.Errorf("%w: %s has no %s beside it", ingest.ErrIncompleteShapefile, p, strings.Join(missing, " or "))
			if msg.ReceiveCount >= s.cfg.maxReceives {
				err = ingest.Permanentf("%w (gave up waiting)", err)
			}
			s.failed(ctx, &v, "file://"+p, err)
			return v
		}
	}
	src, fetcher, err := ingest.LocalSource(p)
	if err != nil {
		s.failed(ctx, &v, "file://"+p, err)
		return v
	}
	s.runJob(ctx, &v, src, fetcher, route)
	return v
}

// missingSidecars returns the required parts (.shx, .dbf) not beside shp.
func missingSidecars(shp string) []string {
	base := strings.TrimSuffix(shp, filepath.Ext(shp))
	var missing []string
	for _, ext := range []string{".shx", ".dbf"} {
		if _, err := os.Stat(base + ext); err == nil {
			continue
		}
		if _, err := os.Stat(base + strings.ToUpper(ext)); err == nil {
			continue
		}
		missing = append(missing, ext)
	}
	return missing
}

func (s *server) filtered(ev ingest.Event, reason string) {
	s.metrics.EventsFiltered.WithLabelValues(reason).Inc()
	s.log.Debug("event filtered", "event", ev.String(), "reason", reason)
}

// failed records a failure that happened before a job existed.
func (s *server) failed(ctx context.Context, v *verdict, what string, err error) {
	if ingest.KindOf(err) == ingest.Transient || ctx.Err() != nil {
		s.log.Warn("event failed, will retry", "source", what, "error", err.Error())
		v.retry = true
		return
	}
	s.log.Error("event failed", "source", what, "error", err.Error())
	v.reasons = append(v.reasons, what+": "+err.Error())
}

// runDelete mirrors a removal event: a delete job that retires the
// object's current generation if the removal is its newest version.
func (s *server) runDelete(ctx context.Context, v *verdict, ev ingest.Event, route ingest.Route) {
	src := ingest.Source{Bucket: ev.Bucket, Key: ev.Key, VersionToken: ev.DeleteVersionToken(), Order: ev.Order()}
	job, err := ingest.NewDeleteJob(src, paramsFor(route, s.cfg.pipelineVersion))
	if err != nil {
		s.failed(ctx, v, src.String(), err)
		return
	}
	s.settle(ctx, v, s.svc.Run(ctx, job))
}

// runJob makes the job and runs it through the claim and write gates.
func (s *server) runJob(ctx context.Context, v *verdict, src ingest.Source, f ingest.Fetcher, route ingest.Route) {
	job, err := ingest.NewJob(src, paramsFor(route, s.cfg.pipelineVersion), f)
	if err != nil {
		s.failed(ctx, v, src.String(), err)
		return
	}
	if claim, ok := s.takePreclaim(job.ID); ok {
		s.settle(ctx, v, s.svc.RunClaimed(ctx, job, claim))
		return
	}
	s.settle(ctx, v, s.svc.Run(ctx, job))
}

// settle folds a job's result into the message's verdict: a duplicate of
// a committed job is success (Run logged it at INFO with the job key); a
// claim held under another worker's live lease is not done, and asks for
// the message back after the lease; a transient failure asks for a retry;
// a permanent one for the dead-letter queue.
func (s *server) settle(ctx context.Context, v *verdict, res ingest.Result) {
	switch res.Outcome {
	case ingest.Written, ingest.Superseded, ingest.Retired:
		select {
		case s.refreshKick <- struct{}{}:
		default: // a refresh is asked for already: it will see this job too
		}
	}
	if res.Outcome == ingest.Held {
		v.held = max(v.held, res.RetryAfter)
		return
	}
	if res.Outcome != ingest.Failed {
		return
	}
	if ingest.KindOf(res.Err) == ingest.Transient || ctx.Err() != nil {
		v.retry = true
		return
	}
	v.reasons = append(v.reasons, fmt.Sprintf("%s (job %s): %v", res.Source, res.JobID, res.Err))
}

// newS3Client returns an S3 client on the AWS configuration; pathStyle is
// "true", "false" or "auto" (path-style when AWS_ENDPOINT_URL_S3 points at
// a local server).
func newS3Client(awsCfg aws.Config, pathStyle string) *s3.Client {
	ps := pathStyle == "true" || (pathStyle == "auto" && os.Getenv("AWS_ENDPOINT_URL_S3") != "")
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.UsePathStyle = ps
		o.DisableLogOutputChecksumValidationSkipped = true // local servers send none
	})
}

// refreshReports stores the report assignments of committed jobs in the
// background, so that neither a worker nor the ack of its message waits
// for them: after a job is committed (settle kicks it; kicks that come
// while it runs are coalesced into the next round), and every
// cfg.reportRefresh, which also catches the jobs of a worker killed or
// cut off from the database between a commit and a refresh. It runs until
// ctx ends; with cfg.reportRefresh 0 each job refreshes its own before its
// ack instead (ingest.Service). The reports are exact whether or not an
// assignment is stored (they compute a missing one on every call); storing
// them keeps the reports fast.
func (s *server) refreshReports(ctx context.Context) {
	if s.cfg.reportRefresh <= 0 {
		return
	}
	t := time.NewTicker(s.cfg.reportRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.refreshKick:
		}
		r, err := s.svc.Store.RefreshReports(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("report refresh failed; the next one tries again", "error", err.Error())
		case err == nil && (r.Assigned > 0 || r.Pruned > 0):
			s.log.Info("report assignments refreshed", "assigned", r.Assigned, "parcels", r.Parcels,
				"pruned", r.Pruned, "seconds", r.Duration.Seconds())
		}
	}
}
