package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

func init() {
	register(&command{name: "compact", summary: "fold the oldest own partitions into the shared ones and rebuild their grown indexes (what serve --compact-every does), for cron", run: runCompact})
}

const reindexFactorUsage = "rebuild a shared partition's index (REINDEX CONCURRENTLY) once its bytes per row exceed this factor of those right after its last rebuild; 0: never, and leave what an interrupted rebuild left"

// reindexFactor maps the flag (0: off) to CompactOptions.ReindexFactor
// (negative: off, 0: the default), and false when the flag is neither 0
// nor more than 1 (compact's and serve's flags alike).
func reindexFactor(flag float64) (float64, bool) {
	switch {
	case flag == 0:
		return -1, true
	case flag > 1:
		return flag, true
	}
	return 0, false
}

// runCompact runs one compaction round, analyzes the tables it folded
// into (ingest.Maintainer.CompactOnce), and prints what it did.
// Exit status 0 when it ran (or another compactor was running), 1 when
// the database failed, 2 for bad arguments.
func runCompact(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("compact", "[flags]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	var o ingest.CompactOptions
	fs.IntVar(&o.Keep, "keep", m.envInt("GEOINGEST_COMPACT_KEEP", ingest.DefaultCompactKeep), "own partitions each feature table keeps, the newest; 0 (the default) folds them all (env GEOINGEST_COMPACT_KEEP)")
	fs.IntVar(&o.MaxJobs, "max-jobs", 0, "fold at most this many jobs (0: no limit)")
	fs.DurationVar(&o.LockTimeout, "lock-timeout", time.Second, "longest wait for the table lock that dropping an emptied partition takes (readers queue behind it); a drop that times out is left for the next run")
	var factor float64
	fs.Float64Var(&factor, "reindex-factor", m.envFloat("GEOINGEST_COMPACT_REINDEX_FACTOR", ingest.DefaultReindexFactor), reindexFactorUsage+" (env GEOINGEST_COMPACT_REINDEX_FACTOR)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := m.envError(); err != nil {
		return err
	}
	var ok bool
	if o.ReindexFactor, ok = reindexFactor(factor); fs.NArg() != 0 || o.Keep < 0 || !ok {
		fs.Usage()
		return errUsage
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	// One round, and the tables it folded into analyzed as a whole, as
	// the batch commands' last rounds do (ingest.Maintainer).
	mt := &ingest.Maintainer{Compactor: a.compactor, Log: m.Log}
	r, err := mt.CompactOnce(ctx, o)
	switch {
	case errors.Is(err, ingest.ErrAnalyzeDenied):
		// The folds are done; only the statistics are left to the owner.
		fmt.Fprintln(m.Stdout, r.String())
		fmt.Fprintf(m.Stderr, "geoingest compact: warning: %v\n", err)
		return nil
	case errors.Is(err, context.Canceled):
		return err
	case err != nil:
		return fmt.Errorf("compact: %w", err)
	}
	fmt.Fprintln(m.Stdout, r.String())
	return nil
}
