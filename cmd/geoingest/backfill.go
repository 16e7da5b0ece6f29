package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/ingest/s3"
)

func init() {
	register(&command{name: "backfill", summary: "run (or re-run, by policy) a job for every object under a bucket prefix or directory", run: runBackfill})
}

// runBackfill lists a bucket prefix (S3) or a local directory (--bucket
// file --prefix DIR, or --dir DIR) and runs every object through the claim
// and write gates, with the re-run policy the user names. It is safe
// alongside live ingest. Exit status 0 when no job failed, 1 otherwise.
func runBackfill(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("backfill", "(--bucket B [--prefix P] | --dir DIR) [--policy skip|new-key|replace] [flags]")
	var d dbFlags
	m.addDBFlagsLevel(fs, &d, "none")
	var p paramFlags
	m.addParamFlags(fs, &p)
	m.addMatchFlags(fs, &p)
	var lf limitFlags
	m.addLimitFlags(fs, &lf)
	var pf policyFlags
	m.addPolicyFlags(fs, &pf, false)
	var gf guardFlags
	addGuardFlags(fs, &gf)
	bucket := fs.String("bucket", "", "bucket to list: an S3 bucket's name, gs://BUCKET (Cloud Storage), azblob://ACCOUNT/CONTAINER (Blob Storage), or \"file\" for a local directory given by --prefix")
	prefix := fs.String("prefix", "", "key prefix to list (with --bucket file: the directory)")
	dir := fs.String("dir", "", "local directory to list (same as --bucket file --prefix DIR)")
	workers := fs.Int("workers", 4, "jobs at once")
	var routes listFlag
	fs.Var(&routes, "route", "PREFIX=TARGET, repeatable, matched against the key (or the path under the directory); default: admin/=admin_units and everything else into --target")
	pathStyle := fs.String("s3-path-style", "auto", "path-style S3 requests: true, false, or auto (true when AWS_ENDPOINT_URL_S3 is set)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	var bcf batchCompactFlags
	m.addBatchCompactFlags(fs, &bcf)
	var wf webhookFlags
	m.addWebhookFlags(fs, &wf)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := bcf.check(); err != nil {
		return err
	}
	if *dir != "" {
		if *bucket != "" && *bucket != ingest.LocalBucket {
			return fmt.Errorf("give --bucket or --dir, not both")
		}
		*bucket, *prefix = ingest.LocalBucket, *dir
	}
	if *bucket == "" || fs.NArg() > 0 || (*bucket == ingest.LocalBucket && *prefix == "") {
		fs.Usage()
		return errUsage
	}
	if err := m.envError(); err != nil {
		return err
	}
	limits, err := lf.limits()
	if err != nil {
		return m.badParams("backfill", err) // a bad flag value: exit 2
	}
	params := p.params()
	if p.schemaErr != nil {
		return p.schemaErr
	}
	if err := pf.apply(fs, &params, false); err != nil {
		return err
	}
	if err := params.Validate(); err != nil {
		return m.badParams("backfill", err)
	}
	if err := wf.check(m, "backfill"); err != nil {
		return err
	}
	guards, err := gf.guards()
	if err != nil {
		return m.badParams("backfill", err)
	}
	specs := []string(routes)
	if len(specs) == 0 {
		specs = []string{"admin/=admin_units", "=" + p.target}
	}
	rs, err := ingest.ParseRoutes(specs)
	if err != nil {
		return m.badParams("backfill", err) // a usage error, exit 2, as serve's
	}
	for _, r := range rs {
		// A route's own mapping or key, checked against --schema at start
		// (as serve does), not file by file as each job fails. A route
		// without either takes the command's, checked above.
		if r.Options.Mapping == "" && len(r.Options.Key) == 0 {
			continue
		}
		if err := r.Check(params); err != nil {
			return m.badParams("backfill", err)
		}
	}

	d.workers = *workers
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	a.svc.Limits = limits
	bf := &ingest.Backfill{Service: a.svc, Files: localfs.Files{}, Router: ingest.NewRouter(rs, nil), Policy: pf.policy, Params: params, Guards: guards, Workers: *workers, Generations: a.store}

	var list func(context.Context, func(ingest.BackfillObject) error) error
	where := source(*bucket, *prefix)
	if *bucket == ingest.LocalBucket {
		if st, err := os.Stat(*prefix); err != nil || !st.IsDir() {
			return fmt.Errorf("%s: not a directory", *prefix)
		}
		list = func(ctx context.Context, fn func(ingest.BackfillObject) error) error {
			return localfs.List(ctx, *prefix, fn)
		}
	} else if objs, lister, name, release, ok, err := cloudBackfill(ctx, m.Getenv, *bucket, *prefix); ok {
		if err != nil {
			return err
		}
		defer release()
		bf.Objects, list, *bucket = objs, lister, name
	} else {
		awsCfg, err := config.LoadDefaultConfig(ctx, m.awsEnvOptions()...)
		if err != nil {
			return fmt.Errorf("aws config: %w", err)
		}
		client := m.newS3Client(awsCfg, *pathStyle)
		bf.Objects = s3.Objects{Client: client}
		list = func(ctx context.Context, fn func(ingest.BackfillObject) error) error {
			return s3.List(ctx, client, *bucket, *prefix, fn)
		}
	}
	// The routes select each webhook's records as serve's do (give serve
	// and backfill the same routes where both deliver for one URL).
	localRoot := ""
	if *bucket == ingest.LocalBucket {
		if localRoot, err = filepath.Abs(*prefix); err != nil {
			return err
		}
	}
	stopHooks, err := startBatchWebhooks(ctx, m, "backfill", a.store, rs, localRoot, wf)
	if err != nil {
		return err
	}
	bar := newProgressBar(m.Stderr, !*quiet)
	compaction := bcf.start(ctx, m, a)
	bf.Progress = bar.update
	bf.Written = compaction.WrittenJob
	stats, err := bf.Run(ctx, list)
	bar.finish(stats)
	finishBatchCompaction(ctx, m, "backfill", &bcf, compaction, *quiet)
	stopHooks(ctx.Err() == nil) // a signal ends the webhooks with no last pass
	fmt.Fprintf(m.Stdout, "backfill %s (policy %s, pipeline version %s): %d listed, %d filtered, %d written, %d pending, %d already present, %d superseded, %d failed, %d in progress elsewhere\n",
		where, pf.policy, params.PipelineVersion, stats.Listed, stats.Filtered, stats.Written, stats.Pending,
		stats.AlreadyPresent, stats.Superseded, stats.Failed, stats.Held)
	for _, f := range stats.Failures {
		fmt.Fprintf(m.Stderr, "failed: %s\n", f)
	}
	if stats.Held > 0 {
		// Not done: their workers may have died. Their claims can be
		// taken over once the leases end.
		fmt.Fprintf(m.Stderr, "geoingest backfill: %d jobs in progress elsewhere (their claims are held under other workers' live leases, the last until %s): they are not done; run the backfill again after then\n",
			stats.Held, stats.HeldUntil.UTC().Format(time.RFC3339))
	}
	if err != nil {
		return err
	}
	if stats.Failed > 0 || stats.Held > 0 {
		return exitError(1)
	}
	if stats.Pending > 0 {
		fmt.Fprintf(m.Stderr, "geoingest backfill: %d versions held as pending by a guard: see geoingest pending list\n", stats.Pending)
		if guards.Force {
			// A forced version is never held: these were held before,
			// and their bytes again are those committed jobs.
			fmt.Fprintf(m.Stderr, "geoingest backfill: --force applies new versions only; a version held before this run is applied with geoingest pending approve JOB --reason TEXT\n")
		}
		return exitError(exitPending)
	}
	return nil
}

func source(bucket, prefix string) string {
	if bucket == ingest.LocalBucket {
		return prefix
	}
	if strings.Contains(bucket, "://") {
		return strings.TrimSuffix(bucket, "/") + "/" + prefix
	}
	return "s3://" + bucket + "/" + prefix
}

// progressBar draws the backfill's progress on a terminal, at most ten
// times a second; elsewhere it draws nothing.
type progressBar struct {
	line  termLine
	on    bool
	last  time.Time
	start time.Time
}

func newProgressBar(w io.Writer, want bool) *progressBar {
	return &progressBar{line: termLine{w: w}, on: want && isTerminal(w), start: time.Now()}
}

func (b *progressBar) update(s ingest.BackfillStats) {
	if !b.on || time.Since(b.last) < 100*time.Millisecond {
		return
	}
	b.last = time.Now()
	b.draw(s)
}

func (b *progressBar) draw(s ingest.BackfillStats) {
	const width = 30
	done, listed := s.Done(), s.Listed
	filled := 0
	if listed > 0 {
		filled = int(float64(width) * float64(done) / float64(listed))
	}
	rate := float64(done) / max(time.Since(b.start).Seconds(), 0.001)
	b.line.draw(fmt.Sprintf("[%s%s] %d/%d listed  written %d  present %d  elsewhere %d  failed %d  %.0f/s",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, listed,
		s.Written, s.AlreadyPresent, s.Held, s.Failed, rate))
}

func (b *progressBar) finish(s ingest.BackfillStats) {
	if !b.on {
		return
	}
	b.draw(s)
	fmt.Fprintln(b.line.w)
}
