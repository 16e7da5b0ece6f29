package main

import (
	"context"
	"fmt"
)

func init() {
	register(&command{name: "verify", summary: "reconcile ledger, claims, sources and feature tables (exit 1 on any mismatch)", run: runVerify})
}

// runVerify runs ingest.Store.Verify and prints what it checked. Exit
// status 0 when the database is consistent; 1 when it is not (each
// problem and then the offending jobs are listed on stdout) or when the
// database could not be read; 2 for bad arguments.
func runVerify(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("verify", "[flags]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	v, err := a.store.Verify(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "checked %d jobs (%d current), %d sources, %d claims, %d parcels, %d admin units\n",
		v.Jobs, v.CurrentJobs, v.Sources, v.Claims, v.Parcels, v.AdminUnits)
	fmt.Fprintln(m.Stdout, "checks: ledger feature_count and total_area_m2 (relative tolerance 1e-9) against the feature rows of every current job;"+
		" no feature row without a current job; one current generation per source, agreeing with jobs.status; claims and ledger agree;"+
		" every stored report assignment of a current parcel job agreeing with the ledger's count and area")
	if n := len(v.PendingAssignments); n > 0 {
		fmt.Fprintf(m.Stdout, "note: %s not stored yet (reports compute them exactly on every call; `geoingest report refresh` stores them)\n",
			plural(n, "report assignment"))
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
