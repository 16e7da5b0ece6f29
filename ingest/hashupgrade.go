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
	n := m.HashBatch
	if n <= 0 {
		n = DefaultHashBatch
	}
	start := time.Now()
	var rewritten, walked int64
	for _, j := range jobs {
		cursor := ""
		for {
			t0 := time.Now()
			b, err := m.Hashes.UpgradeHashes(ctx, j, cursor, n)
			if err != nil {
				if ctx.Err() == nil {
					m.Log.Warn("a batch of the match hashes' upgrade failed; the next round tries again", "job", j, "error", err.Error())
				}
				return
			}
			if b.Busy {
				break // a writer holds the source: the next round
			}
			rewritten += b.Rewritten
			if b.Next == "" {
				walked++
				break
			}
			cursor = b.Next
			select {
			case <-ctx.Done():
				return
			case <-time.After(max(time.Since(t0), time.Millisecond)):
			}
		}
	}
	if rewritten > 0 {
		m.Log.Info("match hashes rewritten to the current form", "rows", rewritten, "generations", walked,
			"seconds", time.Since(start).Seconds())
	}
}
