package main

import (
	"flag"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
)

// exitPending is the exit status of ingest and backfill when every file
// was committed but a version was held as pending (ingest.Pending): it
// waits for `geoingest pending approve|reject`.
const exitPending = 4

// guardFlags are the flags of the guards (ingest.Guards) of ingest and
// backfill: --force with --reason, and the thresholds.
type guardFlags struct {
	force                   bool
	reason, actor           string
	shrink, extent, quarant string
	noDrift, off            bool
}

func addGuardFlags(fs *flag.FlagSet, gf *guardFlags) {
	fs.BoolVar(&gf.force, "force", false, "apply a version even when it trips a guard (needs --reason; what the guards found is recorded with it)")
	fs.StringVar(&gf.reason, "reason", "", "with --force: why, recorded in the guards' audit trail")
	fs.StringVar(&gf.actor, "actor", "", "with --force: who forces, recorded in the guards' audit trail (default: cli: and the operating-system user)")
	fs.StringVar(&gf.shrink, "guard-shrink", "", "hold a version whose feature count or total area falls by more than this fraction, or off (default 0.2; a route's guard-shrink otherwise)")
	fs.StringVar(&gf.extent, "guard-extent", "", "hold a version whose bounding box shares less than 1 minus this fraction with the current one's, or off (default 0.5)")
	fs.StringVar(&gf.quarant, "guard-quarantine", "", "hold a version that leaves out more than this fraction of its file's features, or off (default 0.1)")
	fs.BoolVar(&gf.noDrift, "no-guard-drift", false, "do not hold a version whose property keys of the current generation are missing or changed type")
	fs.BoolVar(&gf.off, "no-guards", false, "turn every guard off: each version replaces the current one")
}

// guards returns the guards the flags set.
func (gf *guardFlags) guards() (ingest.Guards, error) {
	g := ingest.Guards{Force: gf.force, Reason: gf.reason, Actor: gf.actor, NoDrift: gf.noDrift, Off: gf.off}
	if gf.reason != "" && !gf.force {
		return g, fmt.Errorf("--reason goes with --force")
	}
	if gf.actor != "" && !gf.force {
		return g, fmt.Errorf("--actor goes with --force")
	}
	if g.Force && g.Actor == "" {
		g.Actor = cliActor()
	}
	for k, v := range map[string]string{"guard-shrink": gf.shrink, "guard-extent": gf.extent, "guard-quarantine": gf.quarant} {
		if v == "" {
			continue
		}
		if _, err := g.ParseGuardOption(k, v); err != nil {
			return g, fmt.Errorf("--%w", err)
		}
	}
	return g, g.Validate()
}
