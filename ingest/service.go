package ingest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/geoingest/geoingest/geomio"
)

// Service runs jobs through the claim gate and the write gate. It is safe
// for concurrent use by many workers (goroutines or processes).
type Service struct {
	Store   *Store
	Metrics *Metrics
	Log     *slog.Logger
	// Owner names this worker in claims. Default: hostname:pid:random.
	Owner string
	// Lease is how long a claim is held without a heartbeat; it must exceed
	// the time between heartbeats by a wide margin (heartbeats come every
	// Lease/3). Default 5 minutes.
	Lease time.Duration
	// TempDir is where inputs are downloaded. Default os.TempDir().
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

	// Test hooks.
	beforeWrite func(Job) // called after the download, before the write gate
	noHeartbeat bool      // do not extend the lease while running
}

// NewService returns a Service with defaults filled in. metrics and log may
// be nil.
func NewService(store *Store, metrics *Metrics, log *slog.Logger) *Service {
	if metrics == nil {
		metrics = store.metrics
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{Store: store, Metrics: metrics, Log: log, Owner: DefaultOwner(), Lease: 5 * time.Minute}
}

// DefaultOwner returns hostname:pid:random, unique per process.
func DefaultOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Run delivers job once: claim, download, write. It never returns a
// duplicate as an error: ClaimLost and AlreadyPresent are successes. A
// failed job comes back with Outcome Failed and Err set; KindOf(Err) says
// whether to retry (Transient: the claim was released) or dead-letter
// (Permanent: the claim is recorded FAILED with the reason). When ctx is
// cancelled mid-job nothing is committed and the claim is released.
func (s *Service) Run(ctx context.Context, job Job) Result {
	return s.run(ctx, job, nil)
}

// RunClaimed is Run for a job whose claim gate was already taken, with
// claim its outcome, by ClaimBatch for this service (so by its Owner). A
// ClaimWon job must be run (or released) by the caller.
func (s *Service) RunClaimed(ctx context.Context, job Job, claim ClaimResult) Result {
	return s.run(ctx, job, &claim)
}

func (s *Service) run(ctx context.Context, job Job, claimed *ClaimResult) Result {
	start := time.Now()
	log := s.Log.With("job", job.ID, "source", job.Source.String())
	res := Result{JobID: job.ID, Source: job.Source.String()}
	defer func() { s.Metrics.JobDuration.Observe(time.Since(start).Seconds()) }()

	var claim ClaimResult
	var err error
	if claimed != nil {
		claim = *claimed
	} else {
		claim, err = s.Store.Claim(ctx, job, s.Owner, s.Lease)
	}
	if err != nil {
		return s.fail(ctx, log, res, job, err)
	}
	if claim != ClaimWon {
		// A committed job reports AlreadyPresent; a live lease elsewhere
		// ClaimLost. Both were stopped at the claim gate.
		s.Metrics.Claims.WithLabelValues("lost").Inc()
		res.Outcome = ClaimLost
		if claim == ClaimCommitted {
			res.Outcome = AlreadyPresent
		}
		log.Info("duplicate stopped at the claim gate", "outcome", res.Outcome)
		return res
	}
	s.Metrics.Claims.WithLabelValues("won").Inc()

	hbCtx, stopHeartbeat := context.WithCancel(ctx)
	defer stopHeartbeat()
	if !s.noHeartbeat {
		go s.heartbeat(hbCtx, log, job.ID)
	}

	if job.Delete {
		wr, err := s.Store.Retire(ctx, job, s.Owner)
		if err != nil {
			return s.fail(ctx, log, res, job, err)
		}
		return s.report(log, res, wr, start)
	}

	dir, err := os.MkdirTemp(s.TempDir, "geoingest-job-")
	if err != nil {
		return s.fail(ctx, log, res, job, Transientf("temp dir: %w", err))
	}
	defer os.RemoveAll(dir)

	fetched, err := job.Fetch.Fetch(ctx, dir)
	if err != nil {
		return s.fail(ctx, log, res, job, err)
	}
	s.Metrics.Downloads.Inc()

	r, err := geomio.Open(fetched.Path, geomio.Options{
		SourceSRID:      job.Params.SourceSRID,
		ResolveCRS:      s.Store.ResolveCRS,
		DefaultEncoding: job.Params.DefaultEncoding,
		Limits:          s.Limits,
	})
	if err != nil {
		return s.fail(ctx, log, res, job, nameSource(err, dir, job.Source))
	}
	defer r.Close()

	if s.beforeWrite != nil {
		s.beforeWrite(job)
	}
	every := s.ProgressInterval
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	pr := newProgressReader(r, log, s.Progress, every, progressLogEvery, job)
	wr, err := s.Store.Write(ctx, job, s.Owner, pr, fetched)
	if err != nil {
		return s.fail(ctx, log, res, job, nameSource(err, dir, job.Source))
	}
	return s.report(log, res, wr, start)
}

// report turns what the write gate did into the delivery's Result, counting
// and logging it.
func (s *Service) report(log *slog.Logger, res Result, wr writeResult, start time.Time) Result {
	res.Outcome, res.Features, res.AreaM2, res.Replaced = wr.outcome, wr.features, wr.areaM2, wr.replaced
	switch wr.outcome {
	case AlreadyPresent:
		s.Metrics.WriteGate.WithLabelValues("already_present").Inc()
		log.Info("duplicate stopped at the write gate", "outcome", AlreadyPresent)
	case Superseded:
		s.Metrics.WriteGate.WithLabelValues("superseded").Inc()
		log.Info("older version committed as superseded", "outcome", Superseded)
	case Retired:
		s.Metrics.WriteGate.WithLabelValues("retired").Inc()
		log.Info("delete applied: the source has no current generation", "outcome", Retired, "retired", wr.replaced)
	default:
		s.Metrics.WriteGate.WithLabelValues("written").Inc()
		log.Info("job written", "outcome", Written, "features", wr.features, "area_m2", wr.areaM2,
			"replaced", wr.replaced, "seconds", time.Since(start).Seconds())
	}
	return res
}

// fail records err against the job according to its kind.
func (s *Service) fail(ctx context.Context, log *slog.Logger, res Result, job Job, err error) Result {
	kind := KindOf(err)
	if ctx.Err() != nil {
		kind = Transient
		err = Transientf("interrupted: %w", err)
	}
	if kind != Transient && !strings.Contains(err.Error(), job.Source.String()) {
		// What the operator reads (and the claim records) names the upload.
		err = fmt.Errorf("%s: %w", job.Source, err)
	}
	s.Metrics.JobsFailed.WithLabelValues(kind.String()).Inc()
	res.Outcome, res.Err = Failed, &Error{Kind: kind, Err: err}
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	switch kind {
	case Transient:
		log.Warn("job failed, will retry", "kind", kind.String(), "error", err.Error())
		if rerr := s.Store.Release(bg, job.ID, s.Owner, err.Error()); rerr != nil {
			log.Warn("release claim", "error", rerr.Error())
		}
	default:
		log.Error("job failed", "kind", kind.String(), "error", err.Error())
		if ferr := s.Store.Fail(bg, job.ID, err.Error()); ferr != nil {
			log.Warn("record failure", "error", ferr.Error())
		}
	}
	return res
}

// heartbeat extends the job's lease every Lease/3 until ctx ends.
func (s *Service) heartbeat(ctx context.Context, log *slog.Logger, jobID string) {
	t := time.NewTicker(s.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ok, err := s.Store.Heartbeat(ctx, jobID, s.Owner, s.Lease)
			if err != nil && ctx.Err() == nil {
				log.Warn("heartbeat failed", "error", err.Error())
			} else if err == nil && !ok {
				log.Warn("lease lost: another worker holds this job's claim")
				return
			}
		}
	}
}

// nameSource rewrites a geomio input error about a file in the job's
// download directory so that it names the upload the user knows: the
// source itself, or for an entry inside an archive, source!entry. The
// entry path is kept as the archive gives it (a hostile "../" included).
func nameSource(err error, dir string, src Source) error {
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
	case strings.HasPrefix(rest, base+"/"):
		ge.File = src.String() + "!" + rest[len(base)+1:]
	default:
		ge.File = src.String() + "!" + rest
	}
	return err
}
