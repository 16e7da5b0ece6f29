package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/ingest/postgis"
)

func init() {
	register(&command{name: "ingest", summary: "ingest local files through the claim and write gates", run: runIngest})
}

// ingestLine is one line of `ingest --json` output.
type ingestLine struct {
	JobID    string  `json:"job_id"`
	Source   string  `json:"source"`
	Outcome  string  `json:"outcome"`
	Features int64   `json:"features"`
	AreaM2   float64 `json:"area_m2"`
	Error    string  `json:"error,omitempty"`
	// Reason: for outcome pending, the guards the version tripped; for a
	// forced version, what they found.
	Reason string `json:"reason,omitempty"`
	// Quarantined: the features a policy left out, each in the
	// quarantine (geoingest quarantine list JOB).
	Quarantined int64 `json:"quarantined,omitempty"`
	// Changes: for a new version of a source (a generation replaced),
	// the job it replaced and what it changed, as geoingest changes
	// --job gives them.
	Changes *ingestChanges `json:"changes,omitempty"`
}

// ingestChanges is an ingest line's change counts.
type ingestChanges struct {
	Base   string              `json:"base_job"`
	Counts ingest.ChangeCounts `json:"counts"`
	// DuplicateKeys: the features whose key value another shares (a
	// placeholder such as -99), matched by content and overlap instead.
	DuplicateKeys int64 `json:"duplicate_keys,omitempty"`
}

// versionChanges is a new version's changes, nil for a first version or
// any other outcome.
func versionChanges(res ingest.Result) *ingestChanges {
	if res.Outcome != ingest.Written || res.Changes == nil || res.Changes.Base == "" {
		return nil
	}
	return &ingestChanges{Base: res.Changes.Base, Counts: res.Changes.Counts, DuplicateKeys: res.Changes.DuplicateKeys}
}

// changesText is the text line's account of a version's changes ("" for
// none): "; 2 added, 1 removed, 3 geometry, 10 attributes, 4230 unchanged".
func changesText(c *ingestChanges) string {
	if c == nil {
		return ""
	}
	n := c.Counts
	s := fmt.Sprintf("; %d added, %d removed, %d geometry, %d attributes, %d unchanged", n.Added, n.Removed, n.Geometry, n.Attributes, n.Unchanged)
	if c.DuplicateKeys > 0 {
		s += fmt.Sprintf("; %d features with a duplicate key (matched by content and overlap)", c.DuplicateKeys)
	}
	return s
}

// runIngest runs each file through the same gates as the queue consumer.
// Exit status 0 when every file is committed (written, already present or
// superseded), 1 when one failed or is in progress elsewhere (its claim
// held under another worker's live lease), else exitPending when a version
// is held as pending by a guard (held now, or before and delivered again
// while still undecided).
func runIngest(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("ingest", "[flags] PATH...")
	var d dbFlags
	var p paramFlags
	// Failures are reported per file on stdout/stderr; logs only on request.
	m.addDBFlagsLevel(fs, &d, "none")
	m.addParamFlags(fs, &p)
	m.addMatchFlags(fs, &p)
	var lf limitFlags
	m.addLimitFlags(fs, &lf)
	var pf policyFlags
	m.addPolicyFlags(fs, &pf, true)
	var gf guardFlags
	addGuardFlags(fs, &gf)
	lease := fs.Duration("lease", 5*time.Minute, "claim lease; heartbeats extend it every lease/3 while a job runs")
	asJSON := fs.Bool("json", false, "print one JSON object per file on stdout")
	quiet := fs.Bool("quiet", false, "no progress line on a terminal")
	var bcf batchCompactFlags
	m.addBatchCompactFlags(fs, &bcf)
	var wf webhookFlags
	m.addWebhookFlags(fs, &wf)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	if err := bcf.check(); err != nil {
		return err
	}
	if err := m.envError(); err != nil {
		return err
	}
	limits, err := lf.limits()
	if err != nil {
		return m.badParams("ingest", err) // a bad flag value: exit 2
	}
	params := p.params()
	if p.schemaErr != nil {
		return p.schemaErr
	}
	if err := pf.apply(fs, &params, true); err != nil {
		return err
	}
	if err := params.Validate(); err != nil {
		return m.badParams("ingest", err)
	}
	if err := wf.check(m, "ingest"); err != nil {
		return err
	}
	guards, err := gf.guards()
	if err != nil {
		return m.badParams("ingest", err)
	}
	// The files are hashed (their job keys need the SHA-256 of their bytes)
	// one ahead of the jobs: the first while the database is connected
	// and its schema checked, each next one while the job before it runs.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	plan := &ingest.Planner{Files: localfs.Files{}, Params: params, Guards: guards}
	sources := planAhead(ctx, plan, fs.Args())
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	svc := a.svc
	svc.Lease = *lease
	svc.Limits = limits
	progress := &progressLine{line: termLine{w: m.Stderr}, on: !*quiet && isTerminal(m.Stderr)}
	if progress.on {
		svc.Progress = progress.update
	}

	// No routes: the webhook's subscriber takes every record, as serve's
	// --webhook does with routes that name no webhook of their own.
	stopHooks, err := startBatchWebhooks(ctx, m, "ingest", a.store, nil, "", wf)
	if err != nil {
		return err
	}
	defer func() { stopHooks(ctx.Err() == nil) }() // after the compaction's finish below
	compaction := bcf.start(ctx, m, a)
	defer finishBatchCompaction(ctx, m, "ingest", &bcf, compaction, *quiet)

	failed, pending := 0, 0
	for it := range sources {
		path := it.Path
		res := ingestFile(ctx, svc, it)
		progress.clear()
		// The bytes of a version still pending: reported as the first
		// delivery was (outcome pending, its reason, exit status 4), not
		// as a duplicate that is done.
		again := res.Outcome == ingest.AlreadyPresent
		res, err = ingest.StillPending(ctx, a.store, res)
		if err != nil {
			fmt.Fprintf(m.Stderr, "geoingest ingest: %s: committed before; whether it is still pending is not known: %v\n", path, err)
		}
		if res.Outcome == ingest.Written {
			compaction.WrittenJob(res)
		}
		if res.Outcome == ingest.Failed || res.Outcome == ingest.Held {
			failed++ // a held claim is not done: its worker may have died
		}
		if res.Outcome == ingest.Pending {
			pending++
		}
		if *asJSON {
			line := ingestLine{JobID: res.JobID, Source: res.Source, Outcome: string(res.Outcome),
				Features: res.Features, AreaM2: res.AreaM2, Reason: res.Reason, Quarantined: res.Quarantined,
				Changes: versionChanges(res)}
			if res.Err != nil {
				line.Error = res.Err.Error()
			}
			if res.Outcome == ingest.Held {
				line.Error = res.HeldError()
			}
			_ = jsonEncoder(m.Stdout).Encode(line)
			continue
		}
		switch {
		case res.Outcome == ingest.Pending:
			fmt.Fprintf(m.Stderr, "geoingest ingest: %s: held as pending, not applied: %s (geoingest pending approve|reject %s --reason TEXT)\n", path, res.Reason, res.JobID)
			fmt.Fprintf(m.Stdout, "%s  %-15s %s  %d features, %.0f m²\n", short(res.JobID), res.Outcome, path, res.Features, res.AreaM2)
		case res.Outcome == ingest.Held:
			fmt.Fprintf(m.Stderr, "geoingest ingest: %s: %s\n", path, res.HeldError())
			fmt.Fprintf(m.Stdout, "%s  %-15s %s\n", short(res.JobID), res.Outcome, path)
		case res.Err != nil:
			fmt.Fprintf(m.Stderr, "geoingest ingest: %v\n", res.Err)
			fmt.Fprintf(m.Stdout, "%s  %-15s %s\n", short(res.JobID), res.Outcome, path)
		case res.Outcome == ingest.AlreadyPresent && res.Features == 0:
			// Stopped at the claim gate, which reads no counts: "0
			// features" would say the file is empty.
			fmt.Fprintf(m.Stdout, "%s  %-15s %s  (committed before: geoingest jobs show %s)\n", short(res.JobID), res.Outcome, path, short(res.JobID))
		default:
			if res.Reason != "" {
				// A forced version: what the guards found in it.
				fmt.Fprintf(m.Stderr, "geoingest ingest: %s: %s\n", path, res.Reason)
			}
			fmt.Fprintf(m.Stdout, "%s  %-15s %s  %d features, %.0f m²%s\n", short(res.JobID), res.Outcome, path, res.Features, res.AreaM2,
				changesText(versionChanges(res)))
		}
		if res.Quarantined > 0 {
			fmt.Fprintf(m.Stderr, "geoingest ingest: %s: %d features left out by a policy, kept in the quarantine (geoingest quarantine list %s)\n", path, res.Quarantined, res.JobID)
		}
		if again {
			if hint := notCurrentHint(ctx, a.store, res.JobID, path); hint != "" {
				fmt.Fprintln(m.Stderr, "geoingest ingest: "+hint)
			}
		}
	}
	if failed > 0 {
		return exitError(1)
	}
	if pending > 0 {
		return exitError(exitPending)
	}
	return nil
}

// planAhead plans each of paths as a job (Planner.PlanPath, which hashes
// the file: its key needs the SHA-256 of its bytes), in order, on a
// goroutine of its own, at most one file ahead of the receiver. It stops
// when ctx is done.
func planAhead(ctx context.Context, plan *ingest.Planner, paths []string) <-chan ingest.Planned {
	out := make(chan ingest.Planned) // the goroutine holds the one ahead
	go func() {
		defer close(out)
		for _, path := range paths {
			it := plan.PlanPath(ctx, path)
			select {
			case out <- it:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func ingestFile(ctx context.Context, svc *ingest.Service, it ingest.Planned) ingest.Result {
	if it.Err != nil {
		return ingest.Result{Source: it.Source, Outcome: ingest.Failed, Err: it.Err}
	}
	return svc.Run(ctx, it.Job)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	if id == "" {
		return "------------"
	}
	return id
}

// progressLine shows a running job's progress on one terminal line,
// overwritten in place and cleared before the job's result is printed.
// While the write gate's last statements run, it ticks the elapsed time
// every second, since they report nothing until they finish.
type progressLine struct {
	on bool

	mu   sync.Mutex
	line termLine
	stop chan struct{} // closed by clear to stop the writing ticker
}

func (p *progressLine) update(jp ingest.JobProgress) {
	if jp.Phase != ingest.PhaseWriting {
		rate := float64(jp.Features) / max(jp.Elapsed.Seconds(), 0.001)
		p.draw(fmt.Sprintf("%s: %d features read (%.0f/s)", jp.Source, jp.Features, rate))
		return
	}
	start := time.Now().Add(-jp.Elapsed)
	text := func() string {
		return fmt.Sprintf("%s: %d features read; writing (normalise, index, ledger), %s elapsed",
			jp.Source, jp.Features, time.Since(start).Round(time.Second))
	}
	p.draw(text())
	p.mu.Lock()
	p.stop = make(chan struct{})
	stop := p.stop
	p.mu.Unlock()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				if p.stop == stop { // not cleared meanwhile
					p.line.draw(text())
				}
				p.mu.Unlock()
			}
		}
	}()
}

func (p *progressLine) draw(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line.draw(text)
}

func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	if p.on {
		p.line.clear()
	}
}

// notCurrentHint says, for a file whose job was written before
// (AlreadyPresent), when that job is no longer its source's current
// generation: ingesting the same bytes again changes nothing, however
// the source changed since, and how to make them current again. "" when
// the job is current, when the current generation holds the same bytes
// (a replace of them made it), or when it cannot be read (the hint is
// only advice). One small query (postgis.Store.JobAgainstCurrent) per
// file already present.
func notCurrentHint(ctx context.Context, store any, jobID, path string) string {
	st, ok := store.(interface {
		JobAgainstCurrent(ctx context.Context, jobID string) (postgis.JobVersusCurrent, error)
	})
	if !ok {
		return ""
	}
	l, err := st.JobAgainstCurrent(ctx, jobID)
	if err != nil || l.Status == "current" || (l.CurrentJob != "" && l.CurrentContentHash == l.ContentHash) {
		return ""
	}
	if l.Status == "pending" {
		// Never current: a guard holds it, and approving it applies it.
		return fmt.Sprintf("%s: these bytes are job %s, held as pending by a guard and not applied; ingesting them again changes nothing. "+
			"See why with geoingest pending show %s, apply them with geoingest pending approve %s --reason TEXT", path, jobID, short(jobID), short(jobID))
	}
	if l.CurrentJob == "" {
		return fmt.Sprintf("%s: these bytes are job %s, written before and now %s; the source has no current generation. "+
			"Ingesting them again changes nothing (a job is written once)", path, jobID, l.Status)
	}
	return fmt.Sprintf("%s: these bytes are job %s, written before and now %s; the source's current generation is %s. "+
		"Ingesting them again changes nothing (a job is written once); to make them current again: "+
		"geoingest ingest --policy replace --if-match %s %s", path, jobID, l.Status, l.CurrentJob, l.CurrentJob, path)
}
