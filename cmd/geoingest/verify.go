package main

import (
	"context"
	"fmt"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

func init() {
	register(&command{name: "verify", summary: "reconcile ledger, claims, sources and feature tables (exit 1 on any mismatch)", run: runVerify})
}

// runVerify runs ingest.ConsoleReader.Verify (or, with --since or
// --source, its incremental mode VerifyScope) and prints what it checked. Exit
// status 0 when the database is consistent; 1 when it is not (each
// problem and then the offending jobs are listed on stdout) or when the
// database could not be read; 2 for bad arguments.
func runVerify(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("verify", "[flags]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	since := fs.String("since", "", "incremental: only what changed since DURATION ago (e.g. 10m), since a DATE (2026-01-31, midnight UTC) or since an RFC 3339 TIMESTAMP")
	source := fs.String("source", "", "incremental: only the sources whose key starts with this prefix")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	scope := ingest.VerifyScope{Source: *source}
	if *since != "" {
		t, err := ingest.ParseSince(*since, time.Now())
		if err != nil {
			fmt.Fprintf(m.Stderr, "geoingest verify: --since: %v\n", err)
			return errUsage
		}
		scope.Since = t
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	// The one read model of jobs, as `jobs` and the console read, on the
	// primary: verify checks what was written.
	var reader ingest.ConsoleReader = a.store
	v, err := reader.VerifyScope(ctx, scope)
	if err != nil {
		return err
	}
	if !scope.IsZero() {
		fmt.Fprintf(m.Stdout, "incremental: %s\n", scope)
	}
	fmt.Fprintf(m.Stdout, "checked %d jobs (%d current), %d sources, %d claims, %d parcels, %d admin units\n",
		v.Jobs, v.CurrentJobs, v.Sources, v.Claims, v.Parcels, v.AdminUnits)
	fmt.Fprintln(m.Stdout, "checks: ledger feature_count and total_area_m2 (relative tolerance 1e-9) against the feature rows of every current job;"+
		" no feature row without a current job; one current generation per source, agreeing with jobs.status; claims and ledger agree;"+
		" every stored report assignment of a current parcel job agreeing with the ledger's count and area")
	if v.Pending > 0 {
		fmt.Fprintf(m.Stdout, "pending: %s held by a guard, not current and invisible to readers, each with the rows its ledger row counts (`geoingest pending list`)\n",
			plural(int(v.Pending), "version"))
	}
	if v.Quarantined > 0 {
		fmt.Fprintf(m.Stdout, "quarantine: %s left out by a policy, each job's agreeing with its ledger row (`geoingest quarantine list`)\n",
			plural(int(v.Quarantined), "feature"))
	}
	if n := len(v.PendingAssignments); n > 0 {
		fmt.Fprintf(m.Stdout, "note: %s not stored yet (reports compute them exactly on every call; `geoingest report refresh` stores them)\n",
			plural(n, "report assignment"))
	}
	for _, u := range v.Unchecked {
		fmt.Fprintf(m.Stdout, "not checked as this role: %s\n", u)
	}
	if v.OK() {
		fmt.Fprintln(m.Stdout, "ok: every committed job's features are present exactly once")
		return nil
	}
	for _, p := range v.Problems {
		fmt.Fprintln(m.Stdout, p.String())
	}
	jobs := v.OffendingJobs()
	fmt.Fprintf(m.Stdout, "FAILED: %s in %s:\n", plural(len(v.Problems), "problem"), plural(len(jobs), "job"))
	for _, j := range jobs {
		fmt.Fprintln(m.Stdout, j)
	}
	return exitError(1)
}

// plural is "1 job", "2 jobs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
