package ingest

import (
	"log/slog"
	"time"

	"github.com/geoingest/geoingest/geomio"
)

// Progress phases of a running job.
const (
	// PhaseReading: features are streaming from the local file into COPY.
	PhaseReading = "reading"
	// PhaseWriting: every feature was read; the write gate is normalising
	// them into the target table and recording the ledger row.
	PhaseWriting = "writing"
)

// JobProgress is how far a running job has got.
type JobProgress struct {
	JobID    string
	Source   string
	Phase    string // PhaseReading or PhaseWriting
	Features int64  // features read from the file so far (all of them in PhaseWriting)
	Elapsed  time.Duration
}

// progressLogEvery is how often a running job logs its progress at INFO.
const progressLogEvery = 10 * time.Second

// progressReader counts the features read through it and reports them:
// to the log every logEvery, to fn (if set) at most every every, and to
// both once when the file is exhausted (the start of PhaseWriting). It
// adds a clock read every 256 features and nothing else to the read path.
type progressReader struct {
	geomio.Reader
	log      *slog.Logger
	fn       func(JobProgress)
	first    func() // if set, called when the first feature has been read
	every    time.Duration
	logEvery time.Duration
	p        JobProgress
	start    time.Time
	lastFn   time.Time
	lastLog  time.Time
	done     bool
}

func newProgressReader(r geomio.Reader, log *slog.Logger, fn func(JobProgress), every, logEvery time.Duration, job Job) *progressReader {
	now := time.Now()
	return &progressReader{Reader: r, log: log, fn: fn, every: every, logEvery: logEvery,
		p: JobProgress{JobID: job.ID, Source: job.Source.String(), Phase: PhaseReading}, start: now, lastFn: now, lastLog: now}
}

func (r *progressReader) Next() bool {
	if r.Reader.Next() {
		r.p.Features++
		if r.p.Features == 1 && r.first != nil {
			r.first()
		}
		if r.p.Features%256 == 0 {
			now := time.Now()
			if r.fn != nil && now.Sub(r.lastFn) >= r.every {
				r.lastFn = now
				r.emit(now, false)
			}
			if now.Sub(r.lastLog) >= r.logEvery {
				r.lastLog = now
				r.emit(now, true)
			}
		}
		return true
	}
	if !r.done && r.Reader.Err() == nil {
		r.done = true
		r.p.Phase = PhaseWriting
		now := time.Now()
		if r.fn != nil {
			r.emit(now, false)
		}
		if now.Sub(r.start) >= r.logEvery {
			r.emit(now, true) // only long jobs: a short one logs its result anyway
		}
	}
	return false
}

func (r *progressReader) emit(now time.Time, toLog bool) {
	r.p.Elapsed = now.Sub(r.start)
	if toLog {
		r.log.Info("job progress", "phase", r.p.Phase, "features_read", r.p.Features, "elapsed", r.p.Elapsed.Round(time.Millisecond))
		return
	}
	r.fn(r.p)
}
