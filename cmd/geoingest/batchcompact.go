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

// options are the compactor's options of the command's last rounds
// (ingest.Maintainer.FinishCompaction): they rebuild the shared indexes
// that are due.
func (b *batchCompactFlags) options() ingest.CompactOptions {
	return ingest.CompactOptions{Keep: b.keep, KeepSole: true}
}

// start starts the maintainer beside the command's jobs, with the
// compactor only (each job stores its own report assignments); nil when
// off. Its rounds beside the jobs fold and drop only: an index rebuilt
// while the batch still writes grows again, and one cut by the finish's
// stop leaves a leftover.
func (b *batchCompactFlags) start(ctx context.Context, m *Main, a *app) *ingest.Maintainer {
	if b.off {
		return nil
	}
	beside := b.options()
	beside.ReindexFactor = -1
	mt := &ingest.Maintainer{Compactor: a.compactor, CompactEvery: time.Minute, CompactOptions: beside, Log: m.Log}
	mt.Start(ctx)
	return mt
}

// check is the flags' usage rule.
func (b *batchCompactFlags) check() error {
	if b.keep < 0 {
		return fmt.Errorf("--compact-keep %d: want 0 or more", b.keep)
	}
	return nil
}

// finishBatchCompaction runs the compactor's last rounds with b's
// options. A failure is a warning on stderr: the jobs are committed, and
// serve's or the next command's compactor folds what is left.
func finishBatchCompaction(ctx context.Context, m *Main, name string, b *batchCompactFlags, mt *ingest.Maintainer) {
	if mt == nil {
		return
	}
	if ctx.Err() != nil {
		mt.Stop()
		return
	}
	if _, err := mt.FinishCompaction(ctx, b.options()); err != nil && ctx.Err() == nil {
		fmt.Fprintf(m.Stderr, "geoingest %s: warning: compaction after the jobs: %v (reads visit more partitions until `geoingest compact` or serve folds them)\n", name, err)
	}
}
