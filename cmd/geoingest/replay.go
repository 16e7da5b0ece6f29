package main

import (
	"context"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
)

func init() {
	register(&command{name: "replay", summary: "deliver a job again and check that nothing changed (exit 1 if anything did)", run: runReplay})
}

// runReplay delivers jobs a second time through the claim and write gates
// and checks that the tables did not change (see ingest.Replay): for each
// FILE, the job that ingesting it with the given parameters makes (it is
// ingested first if it was not yet); with --job, a committed local-file
// job rebuilt from its ledger row. Exit status 0 when every replay left
// everything unchanged; 1 when anything changed, a snapshot disagreed
// with the ledger, or a delivery failed (each listed on stdout); 2 for
// bad arguments.
func runReplay(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("replay", "[flags] FILE... | --job JOB_ID")
	var d dbFlags
	var p paramFlags
	m.addDBFlags(fs, &d)
	m.addParamFlags(fs, &p)
	m.addMatchFlags(fs, &p)
	var lf limitFlags
	m.addLimitFlags(fs, &lf)
	jobID := fs.String("job", "", "replay this committed job (a local file's) instead of FILEs")
	lease := fs.Duration("lease", 5*time.Minute, "claim lease")
	if err := parse(fs, args); err != nil {
		return err
	}
	if (*jobID == "") == (fs.NArg() == 0) {
		fmt.Fprintln(m.Stderr, "geoingest replay: give FILEs or --job, not both")
		fs.Usage()
		return errUsage
	}
	if err := m.envError(); err != nil {
		return err
	}
	limits, err := lf.limits()
	if err != nil {
		return m.badParams("replay", err) // a bad flag value: exit 2
	}
	params := p.params()
	if p.schemaErr != nil {
		return p.schemaErr
	}
	if err := params.Validate(); err != nil {
		// A flag's value the job cannot take: a usage error.
		return m.badParams("replay", err)
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	svc := a.svc
	svc.Lease = *lease
	svc.Limits = limits

	var jobs []ingest.Job
	if *jobID != "" {
		id, err := m.jobID(ctx, "replay", a.store, *jobID)
		if err != nil {
			return err
		}
		job, err := a.store.LedgerJob(ctx, id, localfs.Files{})
		if err != nil {
			return err
		}
		jobs = append(jobs, job)
	}
	plan := &ingest.Planner{Files: localfs.Files{}, Params: params}
	for _, path := range fs.Args() {
		it := plan.PlanPath(ctx, path)
		if it.Err != nil {
			return it.Err
		}
		jobs = append(jobs, it.Job)
	}

	bad := 0
	for _, job := range jobs {
		rep, err := ingest.Replay(ctx, svc, a.store, job)
		if err != nil {
			bad++
			fmt.Fprintf(m.Stdout, "%s  %s  FAILED: %v\n", job.ID, job.Source, err)
			continue
		}
		if rep.First.Outcome != "" {
			fmt.Fprintf(m.Stdout, "%s  %s  first delivery: %s\n", job.ID, job.Source, rep.First.Outcome)
		}
		if rep.OK() {
			fmt.Fprintf(m.Stdout, "%s  %s  unchanged: replay was %s; %s, committed %s, %d features, checksum %s\n",
				job.ID, job.Source, rep.Second.Outcome, rep.After.Status, rep.After.CommittedAt.UTC().Format(time.RFC3339Nano),
				rep.After.Features.N, rep.After.Features.Checksum)
			continue
		}
		bad++
		fmt.Fprintf(m.Stdout, "%s  %s  CHANGED (replay was %s):\n", job.ID, job.Source, rep.Second.Outcome)
		for _, c := range rep.Changes {
			fmt.Fprintf(m.Stdout, "  %s\n", c)
		}
	}
	if bad > 0 {
		return exitError(1)
	}
	return nil
}
