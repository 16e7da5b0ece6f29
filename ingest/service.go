package ingest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/geoingest/geoingest/geomio"
)

// Service runs jobs through the claim gate and the write gate. It is safe
// for concurrent use by many workers (goroutines or processes).
type Service struct {
	// Store is the pipeline's store: the claim gate, the write gate and
	// the CRS registration.
	Store JobStore
	// Reports, when set, refreshes the report assignments after each
	// committed write or delete (unless NoReportRefresh).
	Reports ParcelRefresher
	// Pending, when set, decides pending versions (Decide).
	Pending Decider
	Metrics *Metrics
	Log     *slog.Logger
	// Owner names this worker in claims. Default: hostname:pid:random.
	Owner string
	// Lease is how long a claim is held without a heartbeat; it must exceed
	// the time between heartbeats by a wide margin (heartbeats come every
	// Lease/3). Default 5 minutes.
	Lease time.Duration
	// TempDir is the work directory: each job downloads its input and
	// extracts archives in a directory of its own under it, removed when
	// the job ends. Default os.TempDir(). A full disk there fails the
	// job as transient (IsDiskFull), counted in Metrics.DiskFull.
	TempDir string
	// Limits bound what one upload may cost (zero: geomio.DefaultLimits).
	Limits geomio.Limits
	// Progress, when set, is called from the goroutine that reads the
	// job's file while a job reads it (at most every ProgressInterval,
	// default 200 ms) and
	// once when the file is read and the write gate's last statements
	// begin. It must return quickly. Independently of it, a job logs its
	// progress at INFO every 10 s while it reads, and at that moment if it
	// has run 10 s.
	Progress         func(JobProgress)
	ProgressInterval time.Duration
	// TrimMemory, when set, is called once for each job whose input is at
	// least TrimMemoryMinSize bytes, on the goroutine that reads it, when
	// the job's first feature has been read: start-up and the opening of
	// the file are behind the process, and memory that only they used can
	// be given back before the stream of features begins (cmd wires
	// pagetrim.Trim: the pages of code and read-only data the process no
	// longer uses). Smaller inputs skip it: their job ends before the trim
	// (a few milliseconds) would pay for itself.
	TrimMemory func()
	// NoReportRefresh turns off the refresh of the report assignments
	// after each committed write or delete (see Store.RefreshReports).
	NoReportRefresh bool
	// Durable, when set, is the durable acknowledgement (durability.go):
	// a duplicate stopped at the claim gate waits for its commit to be
	// on the standbys (AwaitReplicas) before it is reported done. The
	// write gate's own wait is the Store's (Durability.RequireReplicas):
	// set both, as serve --ack-replicas does.
	Durable Durability
}

// TrimMemoryMinSize is the input size from which a job calls
// Service.TrimMemory.
const TrimMemoryMinSize = 1 << 20

// NewService returns a Service on store with defaults filled in: when
// store also refreshes the report assignments (ParcelRefresher) or
// decides pending versions (Decider), as postgis.Store does, the Service
// uses it for those too. metrics and log may be nil.
func NewService(store JobStore, metrics *Metrics, log *slog.Logger) *Service {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Service{Store: store, Metrics: metrics, Log: log, Owner: DefaultOwner(), Lease: 5 * time.Minute}
	s.Reports, _ = store.(ParcelRefresher)
	s.Pending, _ = store.(Decider)
	return s
}

// DefaultOwner returns hostname:pid:random, unique per process.
func DefaultOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Run delivers job once: claim, download, write. It never returns a
// duplicate of a committed job as an error: AlreadyPresent (stopped at the
// claim gate or at the write gate) is success. A claim held by another
// worker under a live lease comes back as Outcome Held with RetryAfter
// set: the job is not done, and the delivery must be retried then, never
// acked. A failed job comes back with Outcome Failed and Err set;
// KindOf(Err) says whether to retry (Transient: the claim was released)
// or dead-letter (Permanent: the claim is recorded FAILED with the
// reason). When ctx is cancelled mid-job nothing is committed and the
// claim is released.
func (s *Service) Run(ctx context.Context, job Job) Result {
	return s.run(ctx, job, nil)
}

// RunClaimed is Run for a job whose claim gate was already taken, with
// claim its outcome, by ClaimBatch for this service (so by its Owner). A
// ClaimWon job must be run (or released) by the caller.
func (s *Service) RunClaimed(ctx context.Context, job Job, claim ClaimResult) Result {
	return s.run(ctx, job, &ClaimStatus{Result: claim})
}

// runClaimed is RunClaimed with the claim's attempt number.
func (s *Service) runClaimed(ctx context.Context, job Job, claim ClaimStatus) Result {
	return s.run(ctx, job, &claim)
}

func (s *Service) run(ctx context.Context, job Job, claimed *ClaimStatus) (out Result) {
	start := time.Now()
	log := s.Log.With("job", job.ID, "source", job.Source.String())
	res := Result{JobID: job.ID, Source: job.Source.String()}
	defer func() { s.Metrics.JobDuration.Observe(time.Since(start).Seconds()) }()

	where := HookWhere{Owner: s.Owner, Job: job.ID}
	HookAt(ctx, HookBeforeClaim, where)
	var claim ClaimStatus
	var err error
	deadAttempts.begin(s.Owner, job.ID)
	defer deadAttempts.end(s.Owner, job.ID)
	if claimed != nil && claimed.Result != ClaimHeld {
		claim = *claimed
	} else {
		// A claim the batch found held is asked again, one job at a time,
		// for its holder and what is left of its lease (or it is won now).
		claim, err = s.Store.Claim(ctx, job, s.Owner, s.Lease)
		if err != nil {
			// The statement may have taken the claim, its answer lost.
			deadAttempts.note(s.Owner, job.ID, uncertainAttempt)
		}
	}
	if err == nil && claim.Result == ClaimHeld && claim.Owner == s.Owner {
		claim, err = s.reclaimOwn(ctx, log, job, claim)
	}
	if err != nil {
		return s.fail(ctx, log, res, job, err)
	}
	switch claim.Result {
	case ClaimCommitted:
		s.Metrics.Claims.WithLabelValues("duplicate").Inc()
		res.Outcome = AlreadyPresent
		log.Info("duplicate stopped at the claim gate", "outcome", res.Outcome)
		if s.Durable != nil {
			// The first delivery may have committed and then not seen its
			// commit on the standbys: this one must not ack before they have it.
			if err := s.Durable.AwaitReplicas(ctx, job.ID); err != nil {
				return s.notDurable(ctx, log, res, err)
			}
		}
		return res
	case ClaimHeld:
		s.Metrics.Claims.WithLabelValues("held").Inc()
		res.Outcome, res.HeldBy, res.LeaseUntil = Held, claim.Owner, claim.LeaseUntil
		res.RetryAfter = heldRetryAfter(claim.LeaseLeft)
		log.Info("claim held by another worker: not a duplicate; retry once its lease ends",
			"outcome", Held, "holder", claim.Owner, "lease_until", claim.LeaseUntil.UTC().Format(time.RFC3339Nano),
			"retry_after", res.RetryAfter.String())
		return res
	}
	s.Metrics.Claims.WithLabelValues("won").Inc()
	deadAttempts.forget(s.Owner, job.ID)
	HookAt(ctx, HookAfterClaim, where)
	defer func() { s.endAttempt(log, job.ID, claim.Attempt, out) }()

	defer s.heartbeat(ctx, log, job.ID)()

	if job.Delete {
		wr, err := s.Store.Retire(ctx, job, s.Owner)
		if nr, ok := errors.AsType[*NotReplicatedError](err); ok {
			return s.notDurable(ctx, log, s.report(log, res, nr.Result, start), err)
		}
		if err != nil {
			return s.fail(ctx, log, res, job, err)
		}
		res = s.report(log, res, wr, start)
		if wr.Outcome == Retired {
			s.refreshReports(ctx, log, job, wr)
		}
		return res
	}

	dir, err := os.MkdirTemp(s.TempDir, "geoingest-job-")
	if err != nil {
		return s.fail(ctx, log, res, job, Transientf("temp dir: %w", err))
	}
	defer os.RemoveAll(dir)

	fetched, err := job.Fetch.Fetch(ctx, dir)
	if errors.Is(err, ErrObjectChanged) && ctx.Err() == nil {
		// Pinned only by its ETag, this version was overwritten: it can
		// never be read, and the newer version's event ingests that one.
		log.Info("the object changed since the event: this version is superseded", "error", err.Error())
		wr, err := s.Store.RecordSuperseded(ctx, job, s.Owner)
		if nr, ok := errors.AsType[*NotReplicatedError](err); ok {
			return s.notDurable(ctx, log, s.report(log, res, nr.Result, start), err)
		}
		if err != nil {
			return s.fail(ctx, log, res, job, err)
		}
		return s.report(log, res, wr, start)
	}
	if err != nil {
		return s.fail(ctx, log, res, job, err)
	}
	s.Metrics.Downloads.Inc()

	opts := geomio.Options{
		SourceSRID:      job.Params.SourceSRID,
		RegisterCRS:     s.Store.RegisterCRS,
		DefaultEncoding: job.Params.DefaultEncoding,
		Limits:          s.Limits,
		Layers:          job.Params.Layers,
		GeometryField:   job.Params.GeometryField,
		TempDir:         dir,
		Context:         ctx,
	}
	// The write gate may fill the reader's skip set before it reads
	// (Prefilter), after a first read of its own.
	skip := &geomio.SkipSet{}
	fetched.Prefilter = &Prefilter{Skip: skip, Open: func(rawOnly bool) (geomio.Reader, error) {
		o := opts
		o.RawHashOnly = rawOnly
		r, err := geomio.Open(fetched.Path, o)
		if err == nil && namesFeatureID(job.Params) {
			r = featureIDReader{r}
		}
		return r, err
	}}
	withSkip := opts
	withSkip.Skip = skip
	r, err := geomio.Open(fetched.Path, withSkip)
	if err != nil {
		return s.fail(ctx, log, res, job, NameSource(err, dir, job.Source))
	}
	defer r.Close()

	HookAt(ctx, HookBeforeWrite, where)
	every := s.ProgressInterval
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	var in geomio.Reader = r
	if namesFeatureID(job.Params) {
		in = featureIDReader{in}
	}
	if Hooked(ctx) {
		in = &copyHook{Reader: r, ctx: ctx, where: where}
	}
	prog := newProgressReader(in, log, s.Progress, every, progressLogEvery, job)
	if s.TrimMemory != nil && fetched.Size >= TrimMemoryMinSize {
		prog.first = s.TrimMemory
	}
	pr := LogLayers(prog)
	wr, err := s.Store.Write(ctx, job, s.Owner, pr, fetched)
	if nr, ok := errors.AsType[*NotReplicatedError](err); ok {
		// Committed (or a duplicate), but not seen on the standbys: said
		// and counted as what the gate did, then given back unacked.
		return s.notDurable(ctx, log, s.report(log, res, nr.Result, start), err)
	}
	if err != nil {
		return s.fail(ctx, log, res, job, NameSource(err, dir, job.Source))
	}
	// What GDAL's readers approximated, dropped or chose, per layer (also
	// recorded on the job by the write gate).
	for _, l := range pr.Layers() {
		if l.Linearised > 0 || l.DroppedZM > 0 || l.GeometryField != "" {
			log.Info("layer read", "layer", l.Name, "format", l.Format, "geometry_field", l.GeometryField, "linearised_curves", l.Linearised, "dropped_zm", l.DroppedZM)
		}
	}
	// Count and log the commit first, then refresh the report assignments.
	res = s.report(log, res, wr, start)
	if wr.Outcome == Written {
		s.refreshReports(ctx, log, job, wr)
	}
	return res
}

// MaxRetryAfter bounds Result.RetryAfter: the longest an SQS message can
// be kept invisible (ChangeMessageVisibility allows 12 hours from the
// receive; the SQS driver caps a nack at what is left of them).
const MaxRetryAfter = 12 * time.Hour

// heldRetryAfter is how long a delivery that found the claim held waits:
// what is left of the lease, plus jitter (a quarter second to a tenth of
// the lease left, at least one second more) so that the copies of a
// message do not all come back in the same instant, at most MaxRetryAfter.
func heldRetryAfter(left time.Duration) time.Duration {
	spread := max(left/10, time.Second)
	d := left + 250*time.Millisecond + time.Duration(mrand.Int64N(int64(spread)))
	return min(d, MaxRetryAfter)
}

// report turns what the write gate did into the delivery's Result, counting
// and logging it.
func (s *Service) report(log *slog.Logger, res Result, wr WriteResult, start time.Time) Result {
	res.Outcome, res.Features, res.AreaM2, res.Replaced, res.Changes, res.Reason = wr.Outcome, wr.Features, wr.AreaM2, wr.Replaced, wr.Changes, wr.Reason
	res.Quarantined = wr.Quarantined
	switch wr.Outcome {
	case Pending:
		s.Metrics.WriteGate.WithLabelValues("pending").Inc()
		log.Warn("version held as pending: a guard tripped; approve or reject it (geoingest pending)", "outcome", Pending,
			"features", wr.Features, "reason", wr.Reason)
	case AlreadyPresent:
		s.Metrics.WriteGate.WithLabelValues("already_present").Inc()
		log.Info("duplicate stopped at the write gate", "outcome", AlreadyPresent)
	case Superseded:
		s.Metrics.WriteGate.WithLabelValues("superseded").Inc()
		log.Info("older version committed as superseded", "outcome", Superseded)
	case Retired:
		s.Metrics.WriteGate.WithLabelValues("retired").Inc()
		log.Info("delete applied: the source has no current generation", "outcome", Retired, "retired", wr.Replaced)
	default:
		s.Metrics.WriteGate.WithLabelValues("written").Inc()
		attrs := []any{"outcome", Written, "features", wr.Features, "area_m2", wr.AreaM2,
			"replaced", wr.Replaced, "seconds", time.Since(start).Seconds()}
		if c := wr.Changes; c != nil && c.Base != "" {
			// A new version of a source: what it changed (geoingest changes --job).
			attrs = append(attrs, "added", c.Counts.Added, "removed", c.Counts.Removed, "geometry", c.Counts.Geometry,
				"attributes", c.Counts.Attributes, "unchanged", c.Counts.Unchanged)
		}
		log.Info("job written", attrs...)
	}
	return res
}

// notDurable ends a delivery whose job the write gate committed (or found
// committed) but whose commit was not seen on the standbys the durable
// acknowledgement waits for (durability.go): the job is not acked, and
// its message is given back as a transient retry. Its claim is COMMITTED
// (or, a failover having lost the commit, whatever the new primary holds),
// so nothing is released or recorded FAILED.
func (s *Service) notDurable(ctx context.Context, log *slog.Logger, res Result, err error) Result {
	if nr, ok := errors.AsType[*NotReplicatedError](err); ok {
		s.Metrics.ReplicaWaitsFailed.Inc()
		log.Warn("commit not yet on the standbys; message given back", "want", nr.Want, "have", nr.Have,
			"lsn", nr.LSN, "waited", nr.Waited.Round(time.Millisecond).String(), "error", nr.Err.Error())
	} else {
		log.Warn("duplicate not acked: its commit could not be checked on this server; message given back", "error", err.Error())
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("interrupted: %w", err)
	}
	res.Outcome, res.Err = Failed, &Error{Kind: Transient, Err: err}
	return res
}

// fail records err against the job according to its kind: a transient
// failure releases the claim; a permanent (or precondition) one records
// the claim FAILED with the reason, and becomes transient when that
// record cannot be written (the database is down), so that nothing is
// dead-lettered because of a database outage.
func (s *Service) fail(ctx context.Context, log *slog.Logger, res Result, job Job, err error) Result {
	if IsDiskFull(err) {
		s.Metrics.DiskFull.Inc()
		dir := s.TempDir
		if dir == "" {
			dir = os.TempDir()
		}
		err = Transientf("%w (the work directory %s is full: free space there, or give a larger one with --work-dir; the job is retried)", err, dir)
	}
	kind := KindOf(err)
	if ctx.Err() != nil {
		kind = Transient
		err = Transientf("interrupted: %w", err)
	}
	if kind != Transient && !strings.Contains(err.Error(), job.Source.String()) {
		// What the operator reads (and the claim records) names the upload.
		err = fmt.Errorf("%s: %w", job.Source, err)
	}
	res.Outcome, res.Err = Failed, &Error{Kind: kind, Err: err}
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	switch kind {
	case Transient:
		log.Warn("job failed, will retry", "kind", kind.String(), "error", err.Error())
		if rerr := s.Store.Release(bg, job.ID, s.Owner, err.Error()); rerr != nil {
			// The claim stays CLAIMED under this attempt's number until
			// its lease ends, but not for this worker: endAttempt notes
			// the attempt as its own dead one, and this worker's next
			// delivery of the job takes the claim back (reclaimOwn).
			log.Warn("release claim failed: this worker takes it back on the job's next delivery; other workers wait for its lease", "error", rerr.Error())
			res.unreleased = true
		}
	default:
		if ferr := s.Store.Fail(bg, job.ID, err.Error(), CauseOf(err)); ferr != nil {
			// The database is unavailable: a failure that nobody can
			// query must not go to the dead-letter queue. Retry: the
			// next attempt fails the same way and records it.
			log.Warn("job failed, but its failure could not be recorded: will retry", "kind", kind.String(),
				"error", err.Error(), "record_error", ferr.Error())
			kind = Transient
			res.Err = &Error{Kind: Transient, Err: fmt.Errorf("%w (recording the failure: %v)", err, ferr)}
			break
		}
		log.Error("job failed", "kind", kind.String(), "error", err.Error())
	}
	s.Metrics.JobsFailed.WithLabelValues(kind.String()).Inc()
	return res
}

// heartbeat extends the job's lease every Lease/3 until the returned stop
// is called or the lease is lost.
func (s *Service) heartbeat(ctx context.Context, log *slog.Logger, jobID string) (stop func()) {
	return renewEvery(ctx, s.Lease/3, func(ctx context.Context) bool {
		if HookAt(ctx, HookHeartbeat, HookWhere{Owner: s.Owner, Job: jobID}) {
			return true // a test lets the lease run out
		}
		ok, err := s.Store.Heartbeat(ctx, jobID, s.Owner, s.Lease)
		if err != nil && ctx.Err() == nil {
			log.Warn("heartbeat failed", "error", err.Error())
		} else if err == nil && !ok {
			log.Warn("lease lost: another worker holds this job's claim")
			return false
		}
		return true
	})
}

// NameSource rewrites a geomio input error about a file in the job's
// download directory so that it names the upload the user knows: the
// source itself (followed by what the reader said of it, such as
// ` layer "roads"`), or for an entry inside an archive, source!entry. The
// entry path is kept as the archive gives it (a hostile "../" included).
// It returns err.
func NameSource(err error, dir string, src Source) error {
	var ge *geomio.Error
	if !errors.As(err, &ge) {
		return err
	}
	rest, ok := strings.CutPrefix(ge.File, dir+string(filepath.Separator))
	if !ok {
		return err
	}
	base := filepath.Base(src.Key)
	switch {
	case rest == base:
		ge.File = src.String()
	case strings.HasPrefix(rest, base+" "):
		ge.File = src.String() + rest[len(base):]
	case strings.HasPrefix(rest, base+"/"):
		ge.File = src.String() + "!" + rest[len(base)+1:]
	case sameSet(rest, base):
		// A part of the upload's set (a shapefile's .prj, a MapInfo
		// table's .dat): the object or file beside it.
		ge.File = Source{Bucket: src.Bucket, Key: path.Join(path.Dir(src.Key), rest)}.String()
	default:
		ge.File = src.String() + "!" + rest
	}
	return err
}

// sameSet reports whether part, a file name, is another part of the
// multi-file set whose main file is named main (geomio.SetRules). Stems
// match case-insensitively, as the rules' extensions do: PARCELS.prj
// beside parcels.shp is a part of its set.
func sameSet(part, main string) bool {
	if strings.Contains(part, "/") || !geomio.IsFileSet(main) {
		return false
	}
	ps, ok1 := geomio.SetStem(part)
	ms, ok2 := geomio.SetStem(main)
	return ok1 && ok2 && strings.EqualFold(ps, ms)
}

// copyHook stops a test build at HookDuringCopy once the write gate's
// COPY has taken the first features.
type copyHook struct {
	geomio.Reader
	ctx   context.Context
	where HookWhere
	n     int
}

func (c *copyHook) Next() bool {
	ok := c.Reader.Next()
	if c.n++; c.n == 2 {
		HookAt(c.ctx, HookDuringCopy, c.where)
	}
	return ok
}
