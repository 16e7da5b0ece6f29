package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// batchCompactFlags are the compaction flags of the batch commands
// (ingest, backfill): they run the compactor as serve does, beside their
// jobs and before they exit, so that reads after a batch load visit a
// few partitions (docs/operations.md, "Compaction").
type batchCompactFlags struct {
	keep int
	off  bool
}

func (m *Main) addBatchCompactFlags(fs *flag.FlagSet, b *batchCompactFlags) {
	fs.IntVar(&b.keep, "compact-keep", m.envInt("GEOINGEST_COMPACT_KEEP", ingest.DefaultCompactKeep),
		"own partitions (of jobs of 8 MiB or more) each feature table keeps; the compactor folds the older ones into the shared partition while the jobs run and before the exit, as serve does (a table whose rows are all in one own partition is left as it is: a read visits one table) (env GEOINGEST_COMPACT_KEEP)")
	fs.BoolVar(&b.off, "no-compact", false, "do not compact: leave the own partitions to serve or geoingest compact (until then a read visits one partition per large source)")
}

// start starts the compactor beside the command's jobs; nil when off.
func (b *batchCompactFlags) start(ctx context.Context, m *Main, a *app) *ingest.BatchCompaction {
	if b.off {
		return nil
	}
	return ingest.StartBatchCompaction(ctx, a.compactor, ingest.CompactOptions{Keep: b.keep, KeepSole: true}, time.Minute, m.Log)
}

// check is the flags' usage rule.
func (b *batchCompactFlags) check() error {
	if b.keep < 0 {
		return fmt.Errorf("--compact-keep %d: want 0 or more", b.keep)
	}
	return nil
}

// finish runs the compactor's last rounds. A failure is a warning on
// stderr: the jobs are committed, and serve's or the next command's
// compactor folds what is left.
func finishBatchCompaction(ctx context.Context, m *Main, name string, bc *ingest.BatchCompaction) {
	if bc == nil || ctx.Err() != nil {
		return
	}
	if _, err := bc.Finish(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(m.Stderr, "geoingest %s: warning: compaction after the jobs: %v (reads visit more partitions until `geoingest compact` or serve folds them)\n", name, err)
	}
}
