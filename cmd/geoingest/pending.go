package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/geoingest/geoingest/ingest"
)

func init() {
	register(&command{name: "pending", summary: "list, approve or reject the versions a guard held as pending", run: runPending})
}

// runPending is `geoingest pending list|approve|reject JOB --reason TEXT`.
// An approval makes the version its source's current generation, once; a
// rejection drops it. Deciding a version again the same way reports the
// first decision and exits 0; the other way is refused (exit 1), and so
// is an approval of a version that a newer one superseded (it did not
// become current).
func runPending(ctx context.Context, m *Main, args []string) error {
	sub := "list"
	if len(args) > 0 && (args[0] == "list" || args[0] == "approve" || args[0] == "reject" || args[0] == "show") {
		sub, args = args[0], args[1:]
	}
	fs := m.flagSet("pending", "[list | show JOB | approve JOB --reason TEXT | reject JOB --reason TEXT] [--format table|json]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	reason := fs.String("reason", "", "approve, reject: why (required; recorded with who and when)")
	actor := fs.String("actor", "", "approve, reject: who decides (default: the operating-system user)")
	format := fs.String("format", "table", "table or json")
	// Flags may follow the job id (pending approve JOB --reason TEXT).
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if *format != "table" && *format != "json" {
		return m.badFormat("pending", *format, "table or json")
	}
	if (sub == "list") != (len(pos) == 0) || len(pos) > 1 {
		fs.Usage()
		return errUsage
	}
	decide := sub == "approve" || sub == "reject"
	if decide && strings.TrimSpace(*reason) == "" {
		fmt.Fprintf(m.Stderr, "geoingest pending: pending %s needs --reason TEXT: it is recorded in the audit trail\n", sub)
		return errUsage
	}
	if *actor == "" {
		*actor = cliActor()
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	if len(pos) == 1 {
		if pos[0], err = m.jobID(ctx, "pending "+sub, a.store, pos[0]); err != nil {
			return err
		}
	}
	out := func(v any) error { return writeJSON(m.Stdout, v) }
	switch sub {
	case "list":
		ps, err := a.store.ListPending(ctx)
		if err != nil {
			return err
		}
		if *format == "json" {
			if ps == nil {
				ps = []ingest.PendingInfo{}
			}
			return out(ps)
		}
		tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', 0)
		defer tw.Flush()
		fmt.Fprintln(tw, "JOB\tSOURCE\tFEATURES\tHELD AT\tCOMPARED WITH\tREASON")
		for _, p := range ps {
			// The generation the guards compared it with, as its hold
			// recorded it (the source's current one may have changed
			// since: an older version applied late).
			var sum struct {
				Current string `json:"current_job"`
			}
			_ = json.Unmarshal(p.Summary, &sum)
			cur := "-"
			if sum.Current != "" {
				cur = short(sum.Current)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", short(p.JobID), p.Source, p.Features, p.Committed.UTC().Format("2006-01-02 15:04:05Z"), cur, p.Reason)
		}
		return nil
	case "show":
		evs, err := a.store.GuardEvents(ctx, pos[0])
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			// A job nobody claimed is unknown, not a job without decisions.
			if _, err := a.store.ConsoleJob(ctx, pos[0]); errors.Is(err, ingest.ErrNoSuchJob) {
				return fmt.Errorf("job %s: %w", pos[0], err)
			}
			// In either format (guards.md).
			return fmt.Errorf("job %s: no guard decisions recorded", pos[0])
		}
		if *format == "json" {
			type ev struct {
				ingest.GuardEvent
				Summary json.RawMessage `json:"summary"`
			}
			list := make([]ev, len(evs))
			for i, e := range evs {
				list[i] = ev{GuardEvent: e, Summary: e.Summary}
			}
			return out(list)
		}
		tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', 0)
		defer tw.Flush()
		fmt.Fprintln(tw, "AT\tACTION\tACTOR\tREASON")
		for _, e := range evs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.At.UTC().Format("2006-01-02 15:04:05Z"), e.Action, e.Actor, e.Reason)
		}
		return nil
	}
	r, err := a.svc.Decide(ctx, pos[0], ingest.Decision{Approve: sub == "approve", Actor: *actor, Reason: *reason})
	if err != nil {
		if errors.Is(err, ingest.ErrNoSuchJob) || errors.Is(err, ingest.ErrNotPending) || ingest.KindOf(err) != ingest.Transient {
			fmt.Fprintf(m.Stderr, "geoingest pending %s: %v\n", sub, err)
			return exitError(1)
		}
		return err
	}
	// An approval that did not make the version current (a newer
	// version of its source was applied first, now or before) is refused
	// as an approval of a rejected version is: exit 1.
	refused := sub == "approve" && r.Action == "superseded"
	if *format == "json" {
		if err := out(r); err != nil {
			return err
		}
		if refused {
			return exitError(1)
		}
		return nil
	}
	switch {
	case refused && r.Already:
		// Superseded by a newer version applied, or held in its place, or
		// by a delete: its audit trail says which job.
		fmt.Fprintf(m.Stderr, "geoingest pending approve: %s was superseded already (by %s at %s): a newer version of its source arrived (see geoingest pending show %s); it cannot be approved, nothing changed\n",
			r.JobID, r.Actor, r.At.UTC().Format("2006-01-02 15:04:05Z"), short(r.JobID))
		return exitError(1)
	case refused:
		fmt.Fprintf(m.Stderr, "geoingest pending approve: %s superseded, not approved: a newer version of its source was applied meanwhile; it was dropped\n", r.JobID)
		return exitError(1)
	case r.Already:
		fmt.Fprintf(m.Stdout, "%s was %s already (by %s at %s): nothing changed\n", r.JobID, r.Action, r.Actor, r.At.UTC().Format("2006-01-02 15:04:05Z"))
	case r.Action == "superseded":
		fmt.Fprintf(m.Stdout, "%s superseded: a newer version of its source was applied meanwhile; it was dropped\n", r.JobID)
	case r.Action == "approved" && r.Replaced != "":
		fmt.Fprintf(m.Stdout, "%s approved: now the current generation (replaced %s)\n", r.JobID, r.Replaced)
	default:
		fmt.Fprintf(m.Stdout, "%s %s\n", r.JobID, r.Action)
	}
	return nil
}
