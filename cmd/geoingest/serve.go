package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	ingests3 "github.com/geoingest/geoingest/ingest/s3"
	"github.com/geoingest/geoingest/queue"
	sqsqueue "github.com/geoingest/geoingest/queue/sqs"
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
	schemaFile                                            string
	workers, maxReceives                                  int
	// readerSpares is how many GDAL reading children are kept started
	// ahead of the jobs (ogr.KeepSpares).
	readerSpares                                      int
	routes                                            listFlag
	webhook, webhookSecretFile                        string
	visibility, grace, backoffBase, backoffMax, lease time.Duration
	wait, poll, settle                                time.Duration
	s3PathStyle                                       string
	// workDir is where jobs download and extract (ingest.Service.TempDir).
	workDir string
	// untilIdle, when positive, stops serve once nothing has been received
	// and no job has run for this long (batch runs, the demo).
	untilIdle time.Duration
	// console serves the operator's console beside /metrics, behind
	// consoleToken when it is set.
	console      bool
	consoleToken string
	// consoleOperatorToken lets its bearer approve and reject pending
	// versions in the console; empty: the console only reads.
	consoleOperatorToken string
	// startTimeout bounds how long the start-up checks retry a server
	// that does not answer; unreadyAfter is how long receives may fail
	// before /readyz answers 503.
	startTimeout, unreadyAfter time.Duration
	// reportRefresh is how often serve stores the report assignments that
	// are missing (see ingest.Store.RefreshReports); 0 turns it off.
	reportRefresh time.Duration
	// compactEvery is how often serve folds old own partitions into the
	// shared ones (see ingest.Compactor); 0 turns it off. compactKeep is
	// the own partitions each table keeps.
	compactEvery time.Duration
	compactKeep  int
	// analyzeEvery bounds how often the compactor's rounds analyze a
	// table they folded into as a whole (ingest.Maintainer.AnalyzeEvery);
	// 0 turns it off.
	analyzeEvery time.Duration
	// compactReindex is the compactor's index rebuild factor
	// (ingest.CompactOptions.ReindexFactor); 0 turns rebuilding off.
	compactReindex float64
	// rehashEvery is how often serve walks the current rows to rewrite
	// the match hashes of an older form (ingest.Maintainer's Hashes); 0
	// turns it off.
	rehashEvery time.Duration
	// pruneInterval is how often serve applies the retention policy
	// (0: never); retention is its policy.
	pruneInterval time.Duration
	retention     ingest.RetentionPolicy
	// ackReplicas is the durable acknowledgement (ingest/durability.go):
	// a message is acked once this many standbys have flushed its job's
	// commit (0: at the commit), waiting at most ackReplicasTimeout.
	ackReplicas        int
	ackReplicasTimeout time.Duration
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

// envFloat is envInt for a decimal number such as 1.5.
func (m *Main) envFloat(name string, def float64) float64 {
	raw := m.Getenv(name)
	if raw == "" {
		return def
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		m.envErrs = append(m.envErrs, fmt.Errorf("environment variable %s=%q: not a number", name, raw))
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
	m.addReadFlag(fs, &d)
	var c serveConfig
	var awsf awsFlags
	m.addAWSFlags(fs, &awsf)
	fs.StringVar(&c.queueURL, "queue-url", m.Getenv("GEOINGEST_QUEUE_URL"), "queue of bucket event notifications (env GEOINGEST_QUEUE_URL): an SQS queue URL (endpoint, region and credentials from the AWS environment: AWS_ENDPOINT_URL_SQS, AWS_REGION, ...), pubsub://projects/P/subscriptions/S (Cloud Storage notifications; Application Default Credentials) or azqueue://ACCOUNT/QUEUE (Event Grid blob events; DefaultAzureCredential or AZURE_STORAGE_CONNECTION_STRING)")
	fs.StringVar(&c.dlqURL, "dlq-url", m.Getenv("GEOINGEST_DLQ_URL"), "dead-letter queue for permanently failed messages, with the reason in the "+queue.ReasonAttribute+" attribute: an SQS queue URL, pubsub://projects/P/topics/T or azqueue://ACCOUNT/QUEUE (env GEOINGEST_DLQ_URL)")
	fs.StringVar(&c.inbox, "inbox", m.Getenv("GEOINGEST_INBOX"), "local inbox directory, the default when no queue URL is given (env GEOINGEST_INBOX; default $GEOINGEST_HOME/inbox or ./inbox)")
	fs.IntVar(&c.workers, "workers", m.envInt("GEOINGEST_WORKERS", 4), "concurrent jobs (env GEOINGEST_WORKERS)")
	fs.IntVar(&c.readerSpares, "reader-spares", m.envInt("GEOINGEST_READER_SPARES", 1), "GDAL reading children kept started, libgdal loaded, ahead of the jobs that read with GDAL: such a job then does not wait for its child to start (each job still reads in a child of its own, sandboxed for its folder); each idle spare holds about 13 MB; 0: none (env GEOINGEST_READER_SPARES)")
	fs.Var(&c.routes, "route", "PREFIX=TARGET or BUCKET:PREFIX=TARGET, with +deletes and ?OPTION=VALUE&... (key=APN, match-iou, mapping, guard-shrink, webhook, expire-zoom, ...: docs/usage.md), repeatable; longest prefix wins (env GEOINGEST_ROUTES, comma-separated; default parcels/=parcels,admin/=admin_units, for an inbox admin/=admin_units,=parcels)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", m.envDefault("GEOINGEST_METRICS_ADDR", "127.0.0.1:9464"), "address of /metrics, /healthz and /readyz; empty for none (env GEOINGEST_METRICS_ADDR)")
	fs.DurationVar(&c.visibility, "visibility", m.envDuration("GEOINGEST_VISIBILITY", 60*time.Second), "SQS visibility timeout asked for on receive and renewed every third of it while a job runs (env GEOINGEST_VISIBILITY)")
	fs.IntVar(&c.maxReceives, "max-receives", m.envInt("GEOINGEST_MAX_RECEIVES", 5), "patience for an incomplete shapefile set: on this receive it is failed and dead-lettered (env GEOINGEST_MAX_RECEIVES)")
	fs.DurationVar(&c.grace, "grace", m.envDuration("GEOINGEST_GRACE", 30*time.Second), "on SIGTERM, how long in-flight jobs may run before they are cancelled and their messages given back (env GEOINGEST_GRACE)")
	fs.DurationVar(&c.backoffBase, "backoff", m.envDuration("GEOINGEST_BACKOFF", 5*time.Second), "first retry delay after a transient failure, doubled per receive (env GEOINGEST_BACKOFF)")
	fs.DurationVar(&c.backoffMax, "backoff-max", m.envDuration("GEOINGEST_BACKOFF_MAX", 15*time.Minute), "longest retry delay (env GEOINGEST_BACKOFF_MAX)")
	fs.IntVar(&c.ackReplicas, "ack-replicas", m.envInt("GEOINGEST_ACK_REPLICAS", 0), "ack a message only once this many standbys streaming from the primary have flushed its job's commit (read from pg_stat_replication by the session that committed), so that a failover cannot lose an acked job even while the primary does not wait for its standbys (an asynchronous standby; pg_auto_failover's wait_primary); a job not seen there within --ack-replicas-timeout stays committed and its message is given back for retry; needs pg_read_all_stats; 0: ack at the commit (env GEOINGEST_ACK_REPLICAS; docs/failover.md)")
	fs.DurationVar(&c.ackReplicasTimeout, "ack-replicas-timeout", m.envDuration("GEOINGEST_ACK_REPLICAS_TIMEOUT", ingest.DefaultReplicaTimeout), "with --ack-replicas, how long a delivery waits for the standbys before its message is given back (env GEOINGEST_ACK_REPLICAS_TIMEOUT)")
	fs.DurationVar(&c.lease, "lease", m.envDuration("GEOINGEST_LEASE", 5*time.Minute), "claim lease; heartbeats extend it every lease/3 (env GEOINGEST_LEASE)")
	fs.DurationVar(&c.wait, "wait", m.envDuration("GEOINGEST_WAIT", 20*time.Second), "SQS long-poll wait, at most 20s (env GEOINGEST_WAIT)")
	fs.DurationVar(&c.poll, "poll", m.envDuration("GEOINGEST_POLL", 500*time.Millisecond), "inbox scan interval (env GEOINGEST_POLL)")
	fs.DurationVar(&c.settle, "settle", m.envDuration("GEOINGEST_SETTLE", 10*time.Second), "inbox: a file is taken once its size and modification time have stayed the same this long (every part of a shapefile set too); names copy tools write to (dotfiles, .part, .tmp, .crdownload, ~) never (env GEOINGEST_SETTLE)")
	fs.StringVar(&c.pipelineVersion, "pipeline-version", m.envDefault("GEOINGEST_PIPELINE_VERSION", ingest.DefaultPipelineVersion), "pipeline version of the jobs (env GEOINGEST_PIPELINE_VERSION)")
	fs.StringVar(&c.schemaFile, "schema", m.Getenv("GEOINGEST_SCHEMA"), "the typed schema file (YAML or JSON) whose mappings routes name with mapping=NAME (env GEOINGEST_SCHEMA; docs/schema.md)")
	fs.StringVar(&c.s3PathStyle, "s3-path-style", m.envDefault("GEOINGEST_S3_PATH_STYLE", "auto"), "path-style S3 requests: true, false, or auto (true when AWS_ENDPOINT_URL_S3 is set)")
	fs.DurationVar(&c.pruneInterval, "prune-interval", m.envDuration("GEOINGEST_PRUNE_INTERVAL", 24*time.Hour), "apply the retention policy (geoingest prune) this often, the first time one interval after the start; 0: never (env GEOINGEST_PRUNE_INTERVAL)")
	c.retention = ingest.DefaultRetention()
	addRetentionFlags(fs, m, &c.retention)
	fs.DurationVar(&c.reportRefresh, "report-refresh", m.envDuration("GEOINGEST_REPORT_REFRESH", time.Minute), "report assignments are stored in the background after each committed job and at least this often (catching a worker killed between a commit and its refresh); 0: each job stores its own before its ack (env GEOINGEST_REPORT_REFRESH)")
	fs.DurationVar(&c.compactEvery, "compact-every", m.envDuration("GEOINGEST_COMPACT_EVERY", time.Minute), "fold the oldest own partitions into the shared ones in the background, after each written job and at least this often, so that spatial queries visit a few partitions; 0: off (run `geoingest compact` from cron instead) (env GEOINGEST_COMPACT_EVERY)")
	fs.DurationVar(&c.analyzeEvery, "analyze-every", m.envDuration("GEOINGEST_ANALYZE_EVERY", time.Hour), "after a compaction round, ANALYZE a feature table it folded into as a whole (autovacuum never does; without it a new connection's first query plans slower) once the rows folded since the last are a tenth of the table, at most this often; 0: never (env GEOINGEST_ANALYZE_EVERY)")
	fs.DurationVar(&c.rehashEvery, "rehash-every", m.envDuration("GEOINGEST_REHASH_EVERY", 24*time.Hour), "at start and then this often, rewrite in the background, a small batch at a time, the match hashes that the server would otherwise recompute at every new version of their source (stored before schema version 44, or never stored); 0: off (env GEOINGEST_REHASH_EVERY)")
	fs.IntVar(&c.compactKeep, "compact-keep", m.envInt("GEOINGEST_COMPACT_KEEP", ingest.DefaultCompactKeep), "own partitions (of jobs of 8 MiB or more) each feature table keeps before the compactor folds the oldest; 0 folds each soon after its commit (env GEOINGEST_COMPACT_KEEP)")
	fs.Float64Var(&c.compactReindex, "compact-reindex-factor", m.envFloat("GEOINGEST_COMPACT_REINDEX_FACTOR", ingest.DefaultReindexFactor), reindexFactorUsage+" (env GEOINGEST_COMPACT_REINDEX_FACTOR)")
	fs.BoolVar(&c.console, "console", m.envBool("GEOINGEST_CONSOLE", true), "serve the read-only operator's console (pages and /api/) on --metrics-addr (env GEOINGEST_CONSOLE)")
	fs.StringVar(&c.consoleToken, "console-token", m.Getenv("GEOINGEST_CONSOLE_TOKEN"), "when set, the console's pages and API require this bearer token (or it as the basic-auth password); /metrics, /healthz and /readyz do not (env GEOINGEST_CONSOLE_TOKEN)")
	fs.StringVar(&c.consoleOperatorToken, "console-operator-token", m.Getenv("GEOINGEST_CONSOLE_OPERATOR_TOKEN"), "when set, the bearer of this token may also act in the console: approve or reject pending versions (env GEOINGEST_CONSOLE_OPERATOR_TOKEN)")
	var lf limitFlags
	m.addLimitFlags(fs, &lf)
	fs.DurationVar(&c.startTimeout, "start-timeout", m.envDuration("GEOINGEST_START_TIMEOUT", time.Minute), "how long the start-up checks (credentials, queues, buckets) retry a server that does not answer before serve exits non-zero; a refusal (no credentials, no such queue) exits at once (env GEOINGEST_START_TIMEOUT)")
	fs.DurationVar(&c.unreadyAfter, "unready-after", m.envDuration("GEOINGEST_UNREADY_AFTER", 30*time.Second), "/readyz answers 503 once every receive has failed for this long, and 200 again at the first that succeeds (env GEOINGEST_UNREADY_AFTER)")
	fs.StringVar(&c.workDir, "work-dir", m.envDefault("GEOINGEST_WORK_DIR", os.TempDir()), "work directory: each job downloads its input and extracts archives in a directory of its own here, removed when the job ends; give it room for the largest upload expanded (env GEOINGEST_WORK_DIR)")
	fs.StringVar(&c.webhook, "webhook", m.Getenv("GEOINGEST_WEBHOOK"), "POST each change record of the sources of routes without a webhook= option to this URL, at least once, signed with GEOINGEST_WEBHOOK_SECRET or --webhook-secret-file (env GEOINGEST_WEBHOOK; docs/changes.md)")
	fs.StringVar(&c.webhookSecretFile, "webhook-secret-file", m.Getenv("GEOINGEST_WEBHOOK_SECRET_FILE"), "file holding the webhooks' HMAC key (env GEOINGEST_WEBHOOK_SECRET_FILE; else GEOINGEST_WEBHOOK_SECRET)")
	fs.DurationVar(&c.untilIdle, "until-idle", 0, "exit once nothing was received and no job ran for this long, and no message given back for a held claim is due (0: serve until SIGTERM)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := m.envError(); err != nil {
		return err
	}
	limits, err := lf.limits()
	if err != nil {
		return m.badParams("serve", err) // a bad flag value: exit 2
	}
	if err := awsf.validate(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	// Flag values serve cannot take: usage errors (exit 2), as a bad
	// route below and every other command's bad flag values are.
	if _, ok := reindexFactor(c.compactReindex); !ok {
		return m.badParams("serve", fmt.Errorf("--compact-reindex-factor must be 0 (off) or more than 1"))
	}
	if c.workers < 1 {
		return m.badParams("serve", fmt.Errorf("--workers must be at least 1"))
	}
	if c.readerSpares < 0 {
		return m.badParams("serve", fmt.Errorf("--reader-spares must be 0 or more"))
	}
	if c.ackReplicas < 0 || c.ackReplicasTimeout <= 0 {
		return m.badParams("serve", fmt.Errorf("--ack-replicas must be 0 or more, --ack-replicas-timeout more than 0"))
	}
	if c.queueURL != "" && c.inbox != "" {
		return m.badParams("serve", fmt.Errorf("give --queue-url or --inbox, not both"))
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
	// A bad route (an option it cannot take, a ?shrink= that is no
	// fraction) is a bad argument: a usage error, exit 2, as ingest's
	// flags of the same job parameters are.
	routes, err := ingest.ParseRoutes(specs)
	if err != nil {
		return m.badParams("serve", err)
	}
	var schema *ingest.Schema
	if c.schemaFile != "" {
		if schema, err = ingest.LoadSchema(c.schemaFile); err != nil {
			return err
		}
	}
	for _, r := range routes {
		// What ParseRoute could not check without the schema (the
		// mapping, a key under it).
		base := ingest.DefaultParams(r.Target)
		base.PipelineVersion, base.Schema = c.pipelineVersion, schema
		if err := r.Check(base); err != nil {
			return m.badParams("serve", err)
		}
	}

	if err := m.setupLog(&d); err != nil {
		return err
	}
	if err := checkWorkDir(c.workDir); err != nil {
		return fmt.Errorf("start-up: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cons := &ingest.Consumer{
		Router:          ingest.NewRouter(routes, nil),
		PipelineVersion: c.pipelineVersion,
		Schema:          schema,
		Workers:         c.workers,
		MaxReceives:     c.maxReceives,
		Grace:           c.grace,
		BackoffBase:     c.backoffBase,
		BackoffMax:      c.backoffMax,
		UntilIdle:       c.untilIdle,
	}

	var inbox string
	if cloudQueue(c.queueURL) {
		release, err := cloudServe(ctx, m, cons, &c, routes, awsf.downloadTimeout)
		if err != nil {
			return err
		}
		defer release()
	} else if c.queueURL != "" {
		awsCfg, err := m.loadAWSConfig(ctx, awsf)
		if err != nil {
			return fmt.Errorf("aws config (check AWS_PROFILE, AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE): %w", err)
		}
		s3Client, sqsClient := m.newS3Client(awsCfg, c.s3PathStyle), m.newSQSClient(awsCfg)
		if err := runStartChecks(ctx, m.Log, c.startTimeout,
			awsStartChecks(awsCfg, sqsClient, s3Client, c.queueURL, c.dlqURL, routes)); err != nil {
			return fmt.Errorf("start-up: %w", err)
		}
		cons.Objects = ingests3.Objects{Client: s3Client, DownloadTimeout: awsf.downloadTimeout}
		cons.Receiver = sqsqueue.New(sqsClient, c.queueURL,
			sqsqueue.Options{Wait: c.wait, Visibility: c.visibility, DeadLetterURL: c.dlqURL})
		cons.Visibility = c.visibility
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
		box, err := queue.NewInbox(dir, queue.InboxOptions{Poll: c.poll, Settle: c.settle, SetOf: localfs.ShapefileSetOf})
		if err != nil {
			return err
		}
		cons.Receiver, cons.Objects, inbox = box, localfs.Inbox{Dir: box.Dir()}, box.Dir()
	}
	defer cons.Receiver.Close()

	d.workers = c.workers
	a, err := m.openWaiting(ctx, &d, reg, c.startTimeout)
	if err != nil {
		return err
	}
	defer a.Close()
	cons.Service = a.svc
	cons.Service.Lease = c.lease
	cons.Service.TempDir = c.workDir
	cons.Service.Limits = limits
	if err := requireReplicas(ctx, m, a, &c); err != nil {
		return err
	}
	// The report assignments are stored by the consumer in the
	// background, not by each job before its message is acked.
	cons.Service.NoReportRefresh = c.reportRefresh > 0
	factor, _ := reindexFactor(c.compactReindex) // checked with the other flags
	// The work beside the jobs: the report refresh, the compactor and the
	// prune, from the consumer's start to its end.
	hashes, _ := a.store.(ingest.HashUpgrader) // the PostGIS store's
	cons.Maintainer = &ingest.Maintainer{
		Refresher: a.store, RefreshEvery: c.reportRefresh,
		Compactor: a.compactor, CompactEvery: c.compactEvery, AnalyzeEvery: c.analyzeEvery,
		CompactOptions: ingest.CompactOptions{Keep: c.compactKeep, ReindexFactor: factor},
		Pruner:         a.store, PruneEvery: c.pruneInterval, Retention: c.retention,
		Hashes: hashes, HashEvery: c.rehashEvery,
		Log: m.Log,
	}

	if c.metricsAddr != "" {
		var ui http.Handler
		if c.console {
			ui = newConsole(a, c.consoleToken, c.consoleOperatorToken, cons.Receiver, m.Log)
		}
		ops, err := startOps(c.metricsAddr, reg, func(ctx context.Context) error {
			if cons.Stopping() {
				return errors.New("shutting down")
			}
			var errs []error
			if err := cons.ReceiveError(c.unreadyAfter); err != nil {
				errs = append(errs, err)
			}
			if err := a.pool.Ping(ctx); err != nil {
				// Jobs fail as transient and are retried until it is back.
				errs = append(errs, fmt.Errorf("database unavailable: %w", err))
			}
			return errors.Join(errs...)
		}, ui, m.Log)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer ops.Close()
	}
	source := "inbox " + inbox
	if c.queueURL != "" {
		source = "queue " + c.queueURL
	}
	logSandbox(m.Log)
	// Spares are started as GDAL jobs' children end, never for a worker
	// that reads no GDAL format.
	ogr.KeepSpares(c.readerSpares)
	defer ogr.KeepSpares(0)
	m.Log.Info("serving", "from", source, "workers", c.workers, "routes", fmt.Sprint(cons.Router.Routes()))
	secret, err := webhookSecret(m, c.webhookSecretFile)
	if err != nil {
		return err
	}
	stopHooks, err := startWebhooks(ctx, m, a.store, routes, inbox, c.webhook, secret)
	if err != nil {
		return err
	}
	cons.Run(ctx)
	_ = stopHooks(ctx.Err() == nil) // idle (--until-idle), not a signal: a last webhook pass (logged)
	m.Log.Info("stopped")
	fmt.Fprintln(m.Stdout, summary(a.metrics))
	return nil
}

// requireReplicas turns on the durable acknowledgement (--ack-replicas):
// the store's write gate and the service's duplicates wait for the
// standbys. It refuses a role that cannot read the standbys' positions
// (no job would ever be acked) and warns when fewer standbys stream now
// than the jobs wait for.
func requireReplicas(ctx context.Context, m *Main, a *app, c *serveConfig) error {
	if c.ackReplicas == 0 {
		return nil
	}
	d, ok := a.store.(ingest.Durability)
	if !ok {
		return fmt.Errorf("--ack-replicas: this store cannot wait for standbys")
	}
	canRead, streaming, err := d.ReplicationStatus(ctx)
	if err != nil {
		return fmt.Errorf("start-up: --ack-replicas: %w", err)
	}
	if !canRead {
		return fmt.Errorf("start-up: --ack-replicas %d: this database role may not read the standbys' positions (pg_stat_replication.flush_lsn), so no job would ever be acked: as an administrator, GRANT pg_read_all_stats (or pg_monitor) TO the role geoingest connects as, or run with --ack-replicas 0", c.ackReplicas)
	}
	if streaming < c.ackReplicas {
		m.Log.Warn("--ack-replicas: fewer standbys stream from the primary than each job waits for: jobs commit, but their messages are given back (and retried) until enough standbys stream",
			"ack_replicas", c.ackReplicas, "streaming", streaming)
	}
	d.RequireReplicas(ingest.ReplicaWait{Replicas: c.ackReplicas, Timeout: c.ackReplicasTimeout})
	a.svc.Durable = d
	m.Log.Info("durable acknowledgement: a message is acked once its job's commit is on the standbys",
		"ack_replicas", c.ackReplicas, "timeout", c.ackReplicasTimeout.String(), "streaming", streaming)
	return nil
}

// summary tells what this run of serve did, from its metrics.
func summary(m *ingest.Metrics) string {
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
	return fmt.Sprintf("serve: %d events: %d written, %d duplicates stopped at the claim gate, %d at the write gate, %d superseded, %d pending (held by a guard), %d deletes applied, %d held elsewhere (given back until the lease ended), %d failed, %d filtered, %d dead-lettered",
		v(m.EventsReceived), v(m.WriteGate.WithLabelValues("written")), v(m.Claims.WithLabelValues("duplicate")),
		v(m.WriteGate.WithLabelValues("already_present")), v(m.WriteGate.WithLabelValues("superseded")),
		v(m.WriteGate.WithLabelValues("pending")), v(m.WriteGate.WithLabelValues("retired")),
		v(m.Claims.WithLabelValues("held")), v(m.JobsFailed.WithLabelValues("permanent")), v(m.EventsFiltered), v(m.DeadLettered))
}

// newS3Client returns an S3 client on the AWS configuration; pathStyle is
// "true", "false" or "auto" (path-style when AWS_ENDPOINT_URL_S3 points at
// a local server).
func (m *Main) newS3Client(awsCfg aws.Config, pathStyle string) *s3.Client {
	ps := pathStyle == "true" || (pathStyle == "auto" && m.Getenv("AWS_ENDPOINT_URL_S3") != "")
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if u := m.awsEndpoint("S3"); u != nil {
			o.BaseEndpoint = u
		}
		o.UsePathStyle = ps
		o.DisableLogOutputChecksumValidationSkipped = true // local servers send none
	})
}

// newSQSClient returns an SQS client on the AWS configuration, at the
// endpoint m.Getenv configures (awsEndpoint).
func (m *Main) newSQSClient(awsCfg aws.Config) *sqs.Client {
	return sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if u := m.awsEndpoint("SQS"); u != nil {
			o.BaseEndpoint = u
		}
	})
}

// logSandbox says at start-up how the GDAL reading child is sandboxed on
// this kernel (docs/operations.md, "Hostile uploads: the threat model"),
// and warns when part of the sandbox is missing.
func logSandbox(log *slog.Logger) {
	if !ogr.Available {
		return
	}
	prot, err := ogr.Probe()
	switch {
	case err != nil:
		log.Warn("the GDAL reading child cannot start: uploads read with GDAL will fail", "error", err.Error())
	case !ogr.Complete(prot):
		log.Warn("the GDAL reader runs without part of its sandbox: this kernel lacks it; files are still read in a child process with GDAL's options for untrusted input, rlimits and the deadline", "protection", prot)
	default:
		log.Info("GDAL reads uploads in a sandboxed child process", "protection", prot)
	}
}
