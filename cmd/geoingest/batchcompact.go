package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// batchCompactFlags are the maintenance flags of the batch commands
// (ingest, backfill): they run serve's maintainer (ingest.Maintainer)
// with the compactor, beside their jobs and before they exit, so that
// reads after a batch load visit a few partitions, and at their end the
// match hashes' upgrade of the generations they wrote (docs/operations.md,
// "Compaction" and "Match hashes").
type batchCompactFlags struct {
	keep     int
	off      bool
	noRehash bool
}

func (m *Main) addBatchCompactFlags(fs *flag.FlagSet, b *batchCompactFlags) {
	fs.IntVar(&b.keep, "compact-keep", m.envInt("GEOINGEST_COMPACT_KEEP", ingest.DefaultCompactKeep),
		"own partitions (of jobs of 8 MiB or more) each feature table keeps; the compactor folds the older ones into the shared partition while the jobs run and before the exit, as serve does (a table whose rows are all in one own partition is left as it is: a read visits one table) (env GEOINGEST_COMPACT_KEEP)")
	fs.BoolVar(&b.off, "no-compact", false, "do not compact: leave the own partitions to serve or geoingest compact (until then a read visits one partition per large source)")
	fs.BoolVar(&b.noRehash, "no-rehash", false, "do not rewrite, after the jobs, the old (pre-schema-44) match hashes that the generations they wrote kept from an older version, which the server would otherwise recompute at every later version: leave them to serve's --rehash-every rounds")
}

// options are the compactor's options of the command's last rounds
// (ingest.Maintainer.FinishCompaction): they rebuild the shared indexes
// that are due.
func (b *batchCompactFlags) options() ingest.CompactOptions {
	return ingest.CompactOptions{Keep: b.keep, KeepSole: true}
}

// start starts the maintainer beside the command's jobs, with the
// compactor (each job stores its own report assignments) unless
// --no-compact, and the match hashes' upgrade at the end (no rounds
// beside the jobs) unless --no-rehash; nil when both are off. Its
// compaction rounds beside the jobs fold and drop only: an index rebuilt
// while the batch still writes grows again, and one cut by the finish's
// stop leaves a leftover. The command names each job it wrote to
// WrittenJob.
func (b *batchCompactFlags) start(ctx context.Context, m *Main, a *app) *ingest.Maintainer {
	mt := &ingest.Maintainer{Log: m.Log}
	if !b.off {
		beside := b.options()
		beside.ReindexFactor = -1
		mt.Compactor, mt.CompactEvery, mt.CompactOptions = a.compactor, time.Minute, beside
	}
	if !b.noRehash {
		mt.Hashes, _ = a.store.(ingest.HashUpgrader) // the PostGIS store's
	}
	if mt.Compactor == nil && mt.Hashes == nil {
		return nil
	}
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
// options, then the match hashes' upgrade of the generations the command
// wrote (Maintainer.FinishHashes), with a progress line on a terminal
// (unless quiet) and a line on stderr when it rewrote anything. A failure
// is a warning on stderr: the jobs are committed, and serve's or the next
// command's maintainer does what is left.
func finishBatchCompaction(ctx context.Context, m *Main, name string, b *batchCompactFlags, mt *ingest.Maintainer, quiet bool) {
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
	line := termLine{w: m.Stderr}
	draw := !quiet && isTerminal(m.Stderr)
	p, err := mt.FinishHashes(ctx, func(p ingest.HashProgress) {
		if draw {
			line.draw(hashLine(name, p))
		}
	})
	line.clear()
	switch {
	case err != nil && ctx.Err() == nil:
		fmt.Fprintf(m.Stderr, "geoingest %s: warning: match hashes after the jobs: %v (serve's --rehash-every rounds rewrite what is left)\n", name, err)
	case err == nil && p.Rewritten > 0:
		fmt.Fprintln(m.Stderr, hashLine(name, p))
	}
}

// hashLine is the match hashes' upgrade's progress.
func hashLine(name string, p ingest.HashProgress) string {
	s := fmt.Sprintf("geoingest %s: match hashes: %d of %d generations walked, %d rows rewritten in %.1fs", name,
		p.Walked, p.Generations, p.Rewritten, p.Duration.Seconds())
	if p.Busy > 0 {
		s += fmt.Sprintf(" (%d held by a writer, left to serve)", p.Busy)
	}
	return s
}
