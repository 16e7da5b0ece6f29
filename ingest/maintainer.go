package ingest

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// ReportRefresher stores the report assignments that are missing
// (Store.RefreshReports).
type ReportRefresher interface {
	RefreshReports(ctx context.Context) (RefreshResult, error)
}

// Maintainer is the one owner of the work beside the jobs that keeps the
// database fast to read and bounded: the report refresh, the compactor and
// the prune, and the match hashes' upgrade. serve's consumer runs one with
// all four (Consumer.Maintainer); the batch commands (ingest, backfill) run
// one with the compactor and end it with FinishCompaction, so that reads
// after a batch load are as fast as after serve's, without a separate
// `geoingest compact`, and then FinishHashes over the generations they
// wrote.
//
// Each part runs on its own: a failed round is logged at WARN and the next
// one tries again, and nothing a reader sees depends on when a round runs.
// A part runs when its worker is set and its interval is positive. The
// methods of a nil *Maintainer do nothing.
type Maintainer struct {
	// Refresher stores the missing report assignments every RefreshEvery
	// and after each committed job (Committed; kicks that come while a
	// round runs are coalesced into the next one), which also catches the
	// jobs of a worker killed or cut off between a commit and a refresh.
	// The reports are exact whether or not an assignment is stored (they
	// compute a missing one on every call); storing them keeps them fast.
	Refresher    ReportRefresher
	RefreshEvery time.Duration
	// Compactor folds old own partitions into the shared ones
	// (Compactor.Compact with CompactOptions) every CompactEvery and after
	// each written job (Written).
	Compactor      Compactor
	CompactEvery   time.Duration
	CompactOptions CompactOptions
	// AnalyzeEvery, when positive, has the compaction rounds also gather
	// the statistics of the tables they fold into as a whole
	// (ParentAnalyzer), which autovacuum never gathers and without which
	// every new connection's first plan of a read is slower. A table is
	// analyzed after a round once the rows folded into it since its last
	// analysis by this maintainer are at least a tenth of the rows the
	// table had at its last analysis (at once when it was never analyzed
	// as a whole), and at most once per AnalyzeEvery: the analysis reads
	// a sample of every partition and, while it samples the table as a
	// whole, holds a lock that a job creating its own partition waits
	// for. serve sets it; the batch commands analyze in
	// FinishCompaction instead.
	AnalyzeEvery time.Duration
	// Pruner applies Retention every PruneEvery, the first time one
	// interval after Start.
	Pruner     Pruner
	PruneEvery time.Duration
	Retention  RetentionPolicy
	// Hashes rewrites the match hashes of a form older than the store's
	// (HashUpgrader) in small batches, at Start and then every HashEvery
	// (hashupgrade.go); HashBatch rows a batch (default
	// DefaultHashBatch). The batch commands set no HashEvery: they walk,
	// at their end (FinishHashes), the generations of the jobs they name
	// to WrittenJob.
	Hashes    HashUpgrader
	HashEvery time.Duration
	HashBatch int
	// Log receives the rounds' results (nil: discarded).
	Log *slog.Logger

	refreshKick, compactKick chan struct{}
	written                  []string // WrittenJob's jobs, for FinishHashes (under mu)
	stop                     context.CancelFunc
	running                  sync.WaitGroup
	// folded are the tables any round folded into (FinishCompaction
	// analyzes them); foldedRows the rows folded into each since this
	// maintainer last analyzed it, analyzedAt when it did (AnalyzeEvery).
	mu         sync.Mutex
	folded     map[string]bool
	foldedRows map[string]int64
	analyzedAt map[string]time.Time
}

// noteFolded records the tables r folded into.
func (m *Maintainer) noteFolded(r CompactResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range r.Folded {
		if m.folded == nil {
			m.folded, m.foldedRows = map[string]bool{}, map[string]int64{}
		}
		m.folded[f.Target] = true
		m.foldedRows[f.Target] += max(f.Rows, 1)
	}
}

// analyzeDue is the policy of AnalyzeEvery: whether a table into which
// folded rows were folded since this maintainer's last analysis of it
// (since, when analyzedBefore), with parentRows rows at its last analysis
// as a whole (-1: never), is analyzed now.
func analyzeDue(folded, parentRows int64, analyzedBefore bool, since, every time.Duration) bool {
	switch {
	case folded <= 0:
		return false
	case analyzedBefore && since < every:
		return false
	case parentRows < 0:
		return true
	}
	return folded*10 >= parentRows
}

// analyzeRound analyzes, as a whole, the tables the policy of
// AnalyzeEvery says are due.
func (m *Maintainer) analyzeRound(ctx context.Context) {
	a, ok := m.Compactor.(ParentAnalyzer)
	if !ok {
		return
	}
	m.mu.Lock()
	var targets []string
	for t, n := range m.foldedRows {
		if n > 0 {
			targets = append(targets, t)
		}
	}
	m.mu.Unlock()
	slices.Sort(targets)
	for _, t := range targets {
		m.mu.Lock()
		folded := m.foldedRows[t]
		last, before := m.analyzedAt[t]
		m.mu.Unlock()
		if before && time.Since(last) < m.AnalyzeEvery {
			continue // no query: the rate limit decides
		}
		rows, err := a.ParentRows(ctx, t)
		if err != nil {
			if ctx.Err() == nil {
				m.Log.Warn("the rows of a table as a whole could not be read; the next round tries again", "target", t, "error", err.Error())
			}
			continue
		}
		if !analyzeDue(folded, rows, before, time.Since(last), m.AnalyzeEvery) {
			continue
		}
		start := time.Now()
		if err := a.AnalyzeParent(ctx, t); err != nil {
			if errors.Is(err, ErrAnalyzeDenied) {
				// Not again for an interval: the role will not change.
				m.mu.Lock()
				if m.analyzedAt == nil {
					m.analyzedAt = map[string]time.Time{}
				}
				m.analyzedAt[t] = time.Now()
				m.mu.Unlock()
			}
			if ctx.Err() == nil {
				m.Log.Warn("analyzing a table as a whole failed; a later round tries again", "target", t, "error", err.Error())
			}
			continue
		}
		m.mu.Lock()
		m.foldedRows[t] -= folded
		if m.analyzedAt == nil {
			m.analyzedAt = map[string]time.Time{}
		}
		m.analyzedAt[t] = time.Now()
		m.mu.Unlock()
		m.Log.Info("analyzed the folded table as a whole", "target", t, "rows_folded_since", folded,
			"rows_at_last_analysis", rows, "seconds", time.Since(start).Seconds())
	}
}

// Start starts the parts' rounds in the background until ctx ends or Stop.
func (m *Maintainer) Start(ctx context.Context) {
	if m == nil {
		return
	}
	m.setLog()
	m.refreshKick, m.compactKick = make(chan struct{}, 1), make(chan struct{}, 1)
	ctx, m.stop = context.WithCancel(ctx)
	if m.Refresher != nil {
		m.goEvery(ctx, m.RefreshEvery, m.refreshKick, m.refreshRound)
	}
	if m.Compactor != nil {
		var deniedLogged time.Time
		m.goEvery(ctx, m.CompactEvery, m.compactKick, func(ctx context.Context) { m.compactRound(ctx, &deniedLogged) })
	}
	if m.Pruner != nil {
		m.goEvery(ctx, m.PruneEvery, nil, m.pruneRound)
	}
	if m.Hashes != nil && m.HashEvery > 0 {
		first := make(chan struct{}, 1)
		first <- struct{}{} // a first round at once
		m.goEvery(ctx, m.HashEvery, first, m.hashRound)
	}
}

func (m *Maintainer) setLog() {
	if m.Log == nil {
		m.Log = slog.New(slog.DiscardHandler)
	}
}

func (m *Maintainer) goEvery(ctx context.Context, every time.Duration, kick <-chan struct{}, round func(context.Context)) {
	m.running.Add(1)
	go func() {
		defer m.running.Done()
		runEvery(ctx, every, kick, round)
	}()
}

// Stop stops the rounds and waits for the one running to end.
func (m *Maintainer) Stop() {
	if m == nil || m.stop == nil {
		return
	}
	m.stop()
	m.running.Wait()
}

// Committed asks for a report refresh soon: a job was committed (written,
// superseded or retired). It never blocks.
func (m *Maintainer) Committed() {
	if m != nil {
		kick(m.refreshKick)
	}
}

// Written asks for a compaction round soon: a job was written. It never
// blocks.
func (m *Maintainer) Written() {
	if m != nil {
		kick(m.compactKick)
	}
}

// WrittenJob is Written for a batch command's job, and keeps the job for
// FinishHashes when Hashes is set and the job replaced a generation: only
// a new version keeps rows in place, and so only its rows can hold a hash
// of a form before the current one. A source's first version writes every
// row with the current form, and looking for older ones in it would read
// all its rows for nothing (1.4 s after a fresh load of 1M). It never
// blocks.
func (m *Maintainer) WrittenJob(r Result) {
	if m == nil {
		return
	}
	m.Written()
	if m.Hashes != nil && r.Replaced != "" {
		m.mu.Lock()
		m.written = append(m.written, r.JobID)
		m.mu.Unlock()
	}
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default: // a round is asked for already: it will see this job too
	}
}

// RefreshNow stores the missing report assignments once, when the
// background refresh is on: a batch run leaves every assignment stored.
func (m *Maintainer) RefreshNow(ctx context.Context) {
	if m == nil || m.Refresher == nil || m.RefreshEvery <= 0 {
		return
	}
	m.setLog()
	if _, err := m.Refresher.RefreshReports(ctx); err != nil {
		m.Log.Warn("report refresh failed; reports compute what is missing until the next one", "error", err.Error())
	}
}

func (m *Maintainer) refreshRound(ctx context.Context) {
	r, err := m.Refresher.RefreshReports(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		m.Log.Warn("report refresh failed; the next one tries again", "error", err.Error())
	case err == nil && (r.Assigned > 0 || r.Pruned > 0):
		m.Log.Info("report assignments refreshed", "assigned", r.Assigned, "parcels", r.Parcels,
			"pruned", r.Pruned, "seconds", r.Duration.Seconds())
	}
}

func (m *Maintainer) compactRound(ctx context.Context, deniedLogged *time.Time) {
	r, err := m.Compactor.Compact(ctx, m.CompactOptions)
	m.noteFolded(r)
	switch {
	case err != nil && ctx.Err() == nil:
		m.Log.Warn("compaction failed; the next round tries again", "error", err.Error())
	case err == nil && (len(r.Folded) > 0 || r.Dropped > 0 || len(r.Rebuilt) > 0 || r.LeftoversDropped > 0):
		logCompaction(m.Log, r)
	}
	if m.AnalyzeEvery > 0 && ctx.Err() == nil {
		m.analyzeRound(ctx)
	}
	if err == nil && len(r.ReindexDenied) > 0 && time.Since(*deniedLogged) > time.Hour {
		*deniedLogged = time.Now()
		m.Log.Warn("shared indexes are due for a rebuild that this role may not do; run `geoingest compact` as the tables' owner",
			"indexes", strings.Join(r.ReindexDenied, ","))
	}
}

func (m *Maintainer) pruneRound(ctx context.Context) {
	r, err := m.Pruner.Prune(ctx, m.Retention)
	if err != nil {
		if ctx.Err() == nil {
			m.Log.Warn("prune failed; retried at the next interval", "error", err.Error())
		}
		return
	}
	m.Log.Info("pruned", "jobs", r.Jobs, "claims", r.Claims, "stale_claims", r.StaleClaims,
		"report_assignments", r.ReportAssignments+r.Assignments, "kept_by_order", r.KeptByOrder, "seconds", r.Duration.Seconds())
}

// analyzeFolded gathers the statistics of the tables the maintainer's
// rounds folded into, as a whole (ParentAnalyzer), when its compactor can.
func (m *Maintainer) analyzeFolded(ctx context.Context) error {
	a, ok := m.Compactor.(ParentAnalyzer)
	if !ok {
		return nil
	}
	m.mu.Lock()
	var targets []string
	for t := range m.folded {
		targets = append(targets, t)
	}
	m.mu.Unlock()
	slices.Sort(targets)
	for _, t := range targets {
		start := time.Now()
		if err := a.AnalyzeParent(ctx, t); err != nil {
			return err
		}
		m.Log.Info("analyzed the folded table as a whole", "target", t, "seconds", time.Since(start).Seconds())
	}
	return nil
}

// CompactOnce is one compaction round with o and then, as
// FinishCompaction ends, the analysis as a whole of each table the round
// folded into (ParentAnalyzer): `geoingest compact`, which leaves reads as
// fast as the batch commands' and serve's compaction does. It returns the
// round's result; an error when the round failed, or when the analysis
// did (ErrAnalyzeDenied, wrapped, when this role may not analyze: the
// round's work is done).
func (m *Maintainer) CompactOnce(ctx context.Context, o CompactOptions) (CompactResult, error) {
	if m == nil || m.Compactor == nil {
		return CompactResult{Own: map[string]int{}}, nil
	}
	m.setLog()
	r, err := m.Compactor.Compact(ctx, o)
	if err != nil {
		return r, err
	}
	m.noteFolded(r)
	return r, m.analyzeFolded(ctx)
}

// finishLockTimeout is the least wait of FinishCompaction's drops for
// their table's lock: longer than PostgreSQL's default deadlock_timeout,
// after which an autovacuum holding the lock is cancelled for them.
const finishLockTimeout = 3 * time.Second

// finishWait bounds how long FinishCompaction goes on after its last round
// that folded, dropped or rebuilt anything: waiting for another compactor,
// or for older readers to end so that emptied partitions can be dropped.
const finishWait = 2 * time.Minute

// FinishCompaction stops the background rounds and compacts with o until a
// round finds the compactor free and leaves no emptied partition waiting
// (or finishWait has passed with no round doing anything, or ctx ends): a
// batch command's last rounds, which also rebuild the shared indexes that
// are due when o asks for it. Several batch processes at once are safe:
// the compactor's lock lets one fold at a time, and each process's finish
// waits its turn, so the last to finish leaves at most o.Keep own
// partitions per table. Last, it analyzes each table that its rounds, or
// the rounds beside the jobs, folded into as a whole (ParentAnalyzer:
// autovacuum never does, and a new connection's first plan is slower
// without them). It returns the totals of its rounds; an error when a
// round or the analysis failed.
func (m *Maintainer) FinishCompaction(ctx context.Context, o CompactOptions) (CompactResult, error) {
	m.Stop()
	start := time.Now()
	total := CompactResult{Own: map[string]int{}}
	if m == nil || m.Compactor == nil {
		return total, nil
	}
	m.setLog()
	// An emptied partition is often being vacuumed by then (its rows were
	// deleted by the fold), and autovacuum gives way to a lock request
	// only after deadlock_timeout (1 s by default): a drop that gives up
	// at the same moment loses every time, round after round.
	o.LockTimeout = max(o.LockTimeout, finishLockTimeout)
	lastWork := start
	for {
		r, err := m.Compactor.Compact(ctx, o)
		m.noteFolded(r)
		total.Folded = append(total.Folded, r.Folded...)
		total.Dropped += r.Dropped
		total.Rebuilt = append(total.Rebuilt, r.Rebuilt...)
		total.LeftoversDropped += r.LeftoversDropped
		total.ReindexDenied = r.ReindexDenied
		total.Own, total.Pending, total.Busy = r.Own, r.Pending, r.Busy
		total.Duration = time.Since(start)
		if err != nil {
			return total, err
		}
		if len(r.Folded) > 0 || r.Dropped > 0 || len(r.Rebuilt) > 0 || r.LeftoversDropped > 0 {
			lastWork = time.Now() // a long round is not a wait
		}
		if !r.Busy && r.Pending == 0 {
			logCompaction(m.Log, total)
			return total, m.analyzeFolded(ctx)
		}
		if time.Since(lastWork) > finishWait {
			logCompaction(m.Log, total)
			if r.Busy {
				return total, errors.New("another compactor held the lock throughout: its rounds (serve's, or the next command's) fold what is left")
			}
			return total, m.analyzeFolded(ctx) // emptied partitions wait for an older reader; the next round drops them
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
