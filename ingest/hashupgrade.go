package ingest

import (
	"context"
	"time"
)

// HashUpgrader rewrites, a batch at a time, the match hashes of current
// rows that are not of the current form: those stored before the PostGIS
// store's migration 0044 (MD5), and those never stored, which the server
// otherwise recomputes at every later version of their source
// (postgis.Store).
type HashUpgrader interface {
	// HashUpgradeJobs lists the current generations, by job id.
	HashUpgradeJobs(ctx context.Context) ([]string, error)
	// HashesOld reports whether job is current and holds a match hash of
	// a form older than the store's (not one never stored); it reads the
	// job's rows once at most.
	HashesOld(ctx context.Context, job string) (bool, error)
	// UpgradeHashes reads at most n rows of a current job after cursor
	// ("" from the start) and rewrites the hashes among them that need
	// it, in one transaction of its own.
	UpgradeHashes(ctx context.Context, job string, cursor string, n int) (HashBatch, error)
}

// HashBatch is one UpgradeHashes batch.
type HashBatch struct {
	Rewritten int64
	// Next is the cursor of the next batch; "" when the job's rows are
	// all read.
	Next string
	// Busy: a write gate held the job's source; nothing was done, the
	// next round tries again.
	Busy bool
}

// DefaultHashBatch is Maintainer.HashBatch's default: rows a batch reads.
const DefaultHashBatch = 5000

// HashProgress is how far a walk of the match hashes' upgrade is:
// generations walked to the end of their rows, left because a writer held
// their source, and rows rewritten.
type HashProgress struct {
	Generations int // to walk
	Walked      int
	Busy        int
	Rewritten   int64
	Duration    time.Duration
}

// hashRound walks every current generation, batch after batch, resting
// between two batches as long as the last one took (so at most half of
// one connection's time, and a writer of the source waits for at most one
// batch), until every one is walked or ctx ends. A generation whose source
// a writer holds is left for the next round. Every round walks them all
// again: a version changes a generation's rows in place, and rows written
// since the last round without a hash (a geometry the server transforms)
// are found only so.
func (m *Maintainer) hashRound(ctx context.Context) {
	jobs, err := m.Hashes.HashUpgradeJobs(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.Log.Warn("the match hashes' upgrade could not list the generations; the next round tries again", "error", err.Error())
		}
		return
	}
	p, err := m.walkHashes(ctx, jobs, true, nil)
	if err != nil {
		if ctx.Err() == nil {
			m.Log.Warn("a batch of the match hashes' upgrade failed; the next round tries again", "error", err.Error())
		}
		return
	}
	if p.Rewritten > 0 {
		m.Log.Info("match hashes rewritten to the current form", "rows", p.Rewritten, "generations", p.Walked,
			"seconds", p.Duration.Seconds())
	}
}

// FinishHashes is a batch command's match hashes' upgrade, after its
// jobs: it walks the generations of the jobs it wrote (WrittenJob) that
// are still current and hold a hash of an older form (HashesOld: rows a
// version kept in place from a generation stored before the current
// form), batch after batch without resting (the command's user waits for
// it; a writer of the source still waits for at most one batch), calling
// progress after each batch when it is not nil. A generation whose source
// a writer holds is left to serve's rounds or the next command. The
// generations it wrote are the only ones a command walks: a database's
// other rows are serve's (its --rehash-every rounds), not a surprise at
// the end of a load; and so are hashes never stored (rows the server
// transformed), which every fresh load of a reprojected file would
// otherwise pay to rewrite.
func (m *Maintainer) FinishHashes(ctx context.Context, progress func(HashProgress)) (HashProgress, error) {
	if m == nil || m.Hashes == nil {
		return HashProgress{}, nil
	}
	m.setLog()
	start := time.Now()
	m.mu.Lock()
	jobs := m.written
	m.written = nil
	m.mu.Unlock()
	var old []string
	for _, j := range jobs {
		s, err := m.Hashes.HashesOld(ctx, j)
		if err != nil {
			return HashProgress{Duration: time.Since(start)}, err
		}
		if s {
			old = append(old, j)
		}
	}
	if len(old) == 0 {
		return HashProgress{Duration: time.Since(start)}, nil
	}
	p, err := m.walkHashes(ctx, old, false, progress)
	p.Duration = time.Since(start)
	if err == nil && p.Rewritten > 0 {
		m.Log.Info("match hashes rewritten to the current form", "rows", p.Rewritten, "generations", p.Walked,
			"seconds", p.Duration.Seconds())
	}
	return p, err
}

// walkHashes walks jobs' rows batch after batch (UpgradeHashes), resting
// between two batches as long as the last one took when rest, and calls
// progress (when not nil) after each batch. It returns at the first
// failed batch.
func (m *Maintainer) walkHashes(ctx context.Context, jobs []string, rest bool, progress func(HashProgress)) (HashProgress, error) {
	n := m.HashBatch
	if n <= 0 {
		n = DefaultHashBatch
	}
	p := HashProgress{Generations: len(jobs)}
	start := time.Now()
	for _, j := range jobs {
		cursor := ""
		for {
			t0 := time.Now()
			b, err := m.Hashes.UpgradeHashes(ctx, j, cursor, n)
			if err != nil {
				p.Duration = time.Since(start)
				return p, err
			}
			p.Rewritten += b.Rewritten
			switch {
			case b.Busy:
				p.Busy++ // a writer holds the source: the next round
			case b.Next == "":
				p.Walked++
			}
			p.Duration = time.Since(start)
			if progress != nil {
				progress(p)
			}
			if b.Busy || b.Next == "" {
				break
			}
			cursor = b.Next
			wait := time.Duration(0)
			if rest {
				wait = max(time.Since(t0), time.Millisecond)
			}
			select {
			case <-ctx.Done():
				return p, ctx.Err()
			case <-time.After(wait):
			}
		}
	}
	return p, nil
}
