package postgis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
)

// rebuildSharedIndexes is the last step of a compaction round (migration
// 0021): on a session of its own that holds the compactor's advisory lock
// (a second compactor skips this, and does not fold meanwhile), it
//
//  1. drops, with DROP INDEX CONCURRENTLY under lockTimeout, every index
//     of a shared partition that an interrupted REINDEX CONCURRENTLY left
//     INVALID (<index>_ccnew, _ccold): PostgreSQL maintains it on every
//     write until it is gone (one that cannot be dropped in time may be
//     another session's REINDEX at work: its table is not rebuilt this
//     round);
//  2. rebuilds, with REINDEX INDEX CONCURRENTLY, every index of at least
//     o.ReindexMinBytes whose bytes per live row exceed o.ReindexFactor
//     times those recorded after its last rebuild, or that has no record,
//     and records the new measure.
//
// Neither statement runs in a transaction block, and neither blocks
// readers or writers: they take SHARE UPDATE EXCLUSIVE on the partition,
// and REINDEX waits (without a lock_timeout: giving up halfway leaves a
// leftover) for the transactions writing the partition and for older
// snapshots. A kill at any point leaves at most a leftover, which the
// next round drops before it rebuilds again. A role that may not rebuild
// (not the tables' owner) gets the due indexes in res.ReindexDenied.
func (s *Store) rebuildSharedIndexes(ctx context.Context, o ingest.CompactOptions, lockTimeout time.Duration, res *ingest.CompactResult) (err error) {
	factor := o.ReindexFactorOrDefault()
	if factor < 0 {
		return nil
	}
	minBytes := o.ReindexMinBytesOrDefault()
	// Every round asks; most find nothing to do. One read on any pooled
	// session says so, without a session of its own or the lock.
	indexes, err := s.q.SharedIndexes(ctx)
	if err != nil {
		return ingest.Transientf("compact: indexes: %w", err)
	}
	if !slices.ContainsFunc(indexes, func(ix db.SharedIndexesRow) bool { return indexDue(ix, factor, minBytes) }) {
		return nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return ingest.Transientf("compact: indexes: %w", err)
	}
	q := db.New(conn)
	locked, err := q.CompactSessionLock(ctx)
	if err != nil {
		conn.Release()
		return ingest.Transientf("compact: indexes: %w", err)
	}
	if !locked { // another compactor is at work
		conn.Release()
		return nil
	}
	defer func() {
		// A session that still holds the lock or its settings must not go
		// back to the pool: close it when the unlock fails.
		bg := context.WithoutCancel(ctx)
		_, uerr := q.CompactSessionUnlock(bg)
		if uerr == nil {
			uerr = q.ResetSessionLockTimeout(bg)
		}
		if uerr != nil {
			_ = conn.Conn().Close(bg)
		}
		conn.Release()
	}()
	// Again under the lock: another compactor may have rebuilt meanwhile.
	indexes, err = q.SharedIndexes(ctx)
	if err != nil {
		return ingest.Transientf("compact: indexes: %w", err)
	}
	if err := q.SetSessionLockTimeout(ctx, fmt.Sprintf("%dms", max(lockTimeout.Milliseconds(), 1))); err != nil {
		return ingest.Transientf("compact: indexes: %w", err)
	}
	busy := map[string]bool{} // tables with a leftover that could not be dropped: another rebuild may be running on them
	for _, ix := range indexes {
		if !ix.Leftover || !ix.MayRebuild {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+pgx.Identifier{ix.SchemaName, ix.IndexName}.Sanitize()); err != nil {
			if ctx.Err() != nil || conn.Conn().IsClosed() {
				return ingest.Transientf("compact: drop index %s left by an interrupted rebuild: %w", ix.IndexName, err)
			}
			s.log.Warn("an index left by an interrupted rebuild could not be dropped yet; the next compaction tries again",
				"index", ix.IndexName, "error", err.Error())
			busy[ix.TableName] = true
			continue
		}
		s.log.Info("dropped an index left by an interrupted rebuild", "index", ix.IndexName)
		res.LeftoversDropped++
	}
	// REINDEX waits for its locks as long as it takes (0: whatever the
	// role or database sets), since giving up halfway leaves a leftover;
	// the deferred reset gives the session its own setting back.
	if err := q.SetSessionLockTimeout(ctx, "0"); err != nil {
		return ingest.Transientf("compact: indexes: %w", err)
	}
	for _, ix := range indexes {
		if ix.Leftover || busy[ix.TableName] || !indexDue(ix, factor, minBytes) {
			continue
		}
		perRow := float64(ix.Bytes) / ix.LiveRows
		if !ix.MayRebuild {
			res.ReindexDenied = append(res.ReindexDenied, ix.IndexName)
			continue
		}
		start := time.Now()
		s.log.Info("rebuilding a shared partition's index", "index", ix.IndexName, "bytes", ix.Bytes,
			"bytes_per_row", perRow, "bytes_per_row_after_last_rebuild", ix.BuiltBytesPerRow)
		if _, err := conn.Exec(ctx, "REINDEX INDEX CONCURRENTLY "+pgx.Identifier{ix.SchemaName, ix.IndexName}.Sanitize()); err != nil {
			return ingest.Transientf("compact: rebuild index %s (the next round drops what it left and tries again): %w", ix.IndexName, err)
		}
		took := time.Since(start)
		after, err := q.NoteIndexBuild(ctx, db.NoteIndexBuildParams{IndexName: ix.IndexName, Seconds: took.Seconds()})
		if err != nil {
			return ingest.Transientf("compact: record the rebuild of %s: %w", ix.IndexName, err)
		}
		s.log.Info("rebuilt a shared partition's index", "index", ix.IndexName, "bytes_before", ix.Bytes,
			"bytes_after", after, "seconds", took.Seconds())
		res.Rebuilt = append(res.Rebuilt, ingest.RebuiltIndex{Index: ix.IndexName, BytesBefore: ix.Bytes, BytesAfter: after, Duration: took})
	}
	return nil
}

// indexDue reports whether ix asks for work: a leftover of an interrupted
// rebuild that may be dropped, or an index of at least minBytes whose
// bytes per live row exceed factor times those after its last rebuild (or
// that has no record), which is rebuilt or, when the role may not,
// reported.
func indexDue(ix db.SharedIndexesRow, factor float64, minBytes int64) bool {
	if ix.Leftover {
		return ix.MayRebuild
	}
	if ix.Bytes < minBytes || ix.LiveRows <= 0 {
		return false
	}
	return ix.BuiltBytesPerRow <= 0 || float64(ix.Bytes)/ix.LiveRows > factor*ix.BuiltBytesPerRow
}
