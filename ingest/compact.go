package ingest

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// DefaultCompactKeep is CompactOptions.Keep's default: the own partitions
// a feature table keeps before the compactor folds the oldest. Every
// partition a spatial query visits costs planning, an index descent and a
// new connection's metadata, and with even 8 of them beside the shared
// one a spatial join costs tens of times one table's (docs/benchmarks.md):
// so none. A large job is still written into a partition of its own, at
// the speed of COPY, and folded after its commit.
const DefaultCompactKeep = 0

// DefaultReindexFactor is CompactOptions.ReindexFactor's default: a
// shared partition's index is rebuilt once its bytes per live row exceed
// 1.5 times those right after its last rebuild. A fresh build is the
// smallest the index gets; inserts and deletes grow it (2.5x after a
// simulated year of weekly replacements), and a rebuild costs a scan of
// the partition and a sort, without blocking readers or writers.
const DefaultReindexFactor = 1.5

// DefaultReindexMinBytes is CompactOptions.ReindexMinBytes' default:
// indexes smaller than 64 MiB are never rebuilt, whatever their growth.
const DefaultReindexMinBytes = 64 << 20

// CompactOptions says how far Compact goes.
type CompactOptions struct {
	// Keep is the number of own partitions each feature table keeps (the
	// newest ones); the older ones are folded into the shared partition.
	// Negative means DefaultCompactKeep; 0 folds them all.
	Keep int
	// KeepSole leaves a feature table alone whose current rows are all in
	// one own partition (its shared partition holds no current job): a
	// read of it visits one table already, and folding would copy a
	// single load a second time. The batch commands set it; the next job
	// of the table makes the fold due.
	KeepSole bool
	// MaxJobs, when positive, is the most jobs one call folds.
	MaxJobs int
	// LockTimeout bounds the wait for the lock that dropping an emptied
	// partition takes on its table (readers queue behind that wait); a
	// drop that times out is retried by the next call. 0 means one second.
	LockTimeout time.Duration
	// ReindexFactor: an index of a shared partition is rebuilt (REINDEX
	// INDEX CONCURRENTLY) when its bytes per live row exceed this factor
	// of those recorded right after its last rebuild; an index with no
	// record is rebuilt once, which records it. Indexes smaller than
	// ReindexMinBytes are left alone. 0 means DefaultReindexFactor;
	// negative turns rebuilding, and the cleanup of interrupted rebuilds,
	// off.
	ReindexFactor float64
	// ReindexMinBytes: 0 means DefaultReindexMinBytes.
	ReindexMinBytes int64
}

// ReindexFactorOrDefault is o.ReindexFactor, DefaultReindexFactor when 0.
func (o CompactOptions) ReindexFactorOrDefault() float64 {
	if o.ReindexFactor == 0 {
		return DefaultReindexFactor
	}
	return o.ReindexFactor
}

// ReindexMinBytesOrDefault is o.ReindexMinBytes, DefaultReindexMinBytes
// when 0 or less.
func (o CompactOptions) ReindexMinBytesOrDefault() int64 {
	if o.ReindexMinBytes <= 0 {
		return DefaultReindexMinBytes
	}
	return o.ReindexMinBytes
}

// KeepOrDefault is o.Keep, DefaultCompactKeep when negative.
func (o CompactOptions) KeepOrDefault() int {
	if o.Keep < 0 {
		return DefaultCompactKeep
	}
	return o.Keep
}

// FoldedJob is one job Compact folded into its table's shared partition.
type FoldedJob struct {
	JobID, Target string
	Rows          int64
	Duration      time.Duration
}

// RebuiltIndex is one index Compact rebuilt.
type RebuiltIndex struct {
	Index                   string
	BytesBefore, BytesAfter int64
	Duration                time.Duration
}

// CompactResult is what one Compact call did.
type CompactResult struct {
	// Folded are the jobs folded, oldest first.
	Folded []FoldedJob
	// Dropped is the number of emptied partitions dropped; Pending those
	// still waiting for older readers to end (the next call drops them).
	Dropped, Pending int
	// Own is, per feature table, the own partitions left.
	Own map[string]int
	// Rebuilt are the shared partitions' indexes rebuilt because they had
	// grown past CompactOptions.ReindexFactor.
	Rebuilt []RebuiltIndex
	// LeftoversDropped is the number of indexes left INVALID by an
	// interrupted rebuild (a killed compactor) that were dropped.
	LeftoversDropped int
	// ReindexDenied are indexes due for a rebuild that the database role
	// may not rebuild (REINDEX needs the table's owner).
	ReindexDenied []string
	// Busy is true when another compactor held the database's compaction
	// lock: this call did nothing.
	Busy bool
	// Duration is the whole call's.
	Duration time.Duration
}

func (r CompactResult) String() string {
	if r.Busy {
		return "another compactor is running: nothing done"
	}
	var rows int64
	for _, f := range r.Folded {
		rows += f.Rows
	}
	s := fmt.Sprintf("%d jobs folded (%d rows), %d emptied partitions dropped, %d waiting for older readers; own partitions left: parcels %d, admin_units %d",
		len(r.Folded), rows, r.Dropped, r.Pending, r.Own["parcels"], r.Own["admin_units"])
	for _, x := range r.Rebuilt {
		s += fmt.Sprintf("; index %s rebuilt: %.1f MiB -> %.1f MiB in %.1f s", x.Index,
			float64(x.BytesBefore)/(1<<20), float64(x.BytesAfter)/(1<<20), x.Duration.Seconds())
	}
	if r.LeftoversDropped > 0 {
		s += fmt.Sprintf("; %d indexes left by an interrupted rebuild dropped", r.LeftoversDropped)
	}
	if len(r.ReindexDenied) > 0 {
		s += fmt.Sprintf("; indexes due for a rebuild that this role may not rebuild (run compact as the tables' owner): %s", strings.Join(r.ReindexDenied, ", "))
	}
	return s + fmt.Sprintf("; in %.2f s", r.Duration.Seconds())
}

func logCompaction(log *slog.Logger, r CompactResult) {
	log.Info("compacted", "folded", len(r.Folded), "dropped", r.Dropped, "pending", r.Pending,
		"own_parcels", r.Own["parcels"], "own_admin_units", r.Own["admin_units"],
		"indexes_rebuilt", len(r.Rebuilt), "index_leftovers_dropped", r.LeftoversDropped, "seconds", r.Duration.Seconds())
}
