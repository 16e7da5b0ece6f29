package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
)

func init() {
	register(&command{name: "prune", summary: "apply the retention policy: old superseded ledger rows, their claims, stale claims, retired report assignments", run: runPrune})
}

// addRetentionFlags adds the retention policy's flags (shared by prune
// and serve) to fs, with their environment variables, over p's values.
func addRetentionFlags(fs *flag.FlagSet, m *Main, p *ingest.RetentionPolicy) {
	fs.IntVar(&p.KeepSuperseded, "keep-superseded", m.envInt("GEOINGEST_PRUNE_KEEP", p.KeepSuperseded), "retention: non-current jobs (superseded, replaced, retired, deleted) whose ledger row and claim are kept per source, newest first (env GEOINGEST_PRUNE_KEEP)")
	fs.DurationVar(&p.MinAge, "prune-min-age", m.envDuration("GEOINGEST_PRUNE_MIN_AGE", p.MinAge), "retention: ledger rows younger than this are kept (env GEOINGEST_PRUNE_MIN_AGE)")
	fs.DurationVar(&p.StaleClaimAge, "stale-claim-age", m.envDuration("GEOINGEST_PRUNE_CLAIM_AGE", p.StaleClaimAge), "retention: claims that never committed (failed, abandoned) and unchanged this long are removed; 0 keeps them (env GEOINGEST_PRUNE_CLAIM_AGE)")
}

// runPrune runs Store.Prune once and says what it removed. Exit status 1
// when the database fails.
func runPrune(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("prune", "[flags]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	p := ingest.DefaultRetention()
	addRetentionFlags(fs, m, &p)
	fs.BoolVar(&p.DryRun, "dry-run", false, "count the ledger rows that would be removed; remove nothing")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 || p.KeepSuperseded < 0 || p.MinAge < 0 || p.StaleClaimAge < 0 {
		fs.Usage()
		return errUsage
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	r, err := a.store.Prune(ctx, p)
	if err != nil {
		return err
	}
	if p.DryRun {
		fmt.Fprintf(m.Stdout, "dry run: %d ledger rows (with their claims) would be removed; %d kept by order\n", r.Jobs, r.KeptByOrder)
		return nil
	}
	fmt.Fprintf(m.Stdout, "pruned: %s\n", r)
	return nil
}
