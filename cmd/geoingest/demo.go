package main

import (
	"context"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/geoingest/geoingest/ingest"
)

func init() {
	register(&command{name: "demo", summary: "ingest the sample parcels and admin units twice and show that the second delivery changed nothing", run: runDemo})
}

// runDemo is the README's first command: it runs the main job on the
// embedded default (or DATABASE_URL) with local files as the bucket. Exit
// status 1 if any delivery failed or the second delivery changed anything.
func runDemo(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("demo", "[--parcels FILE] [--admin FILE]")
	var d dbFlags
	m.addDBFlagsLevel(fs, &d, "none")
	parcels := fs.String("parcels", "testdata/synthetic/parcels_10k.geojson", "parcels to ingest into parcels")
	admin := fs.String("admin", "testdata/synthetic/admin.geojson", "admin units to ingest into admin_units")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := m.setupLog(&d); err != nil {
		return err
	}
	pool, err := m.openDB(ctx, &d)
	if err != nil {
		return err
	}
	defer pool.Close()
	metrics := ingest.NewMetrics(nil)
	store := ingest.NewStore(pool, metrics, m.Log)
	svc := ingest.NewService(store, metrics, m.Log)

	inputs := []struct{ path, target string }{{*parcels, "parcels"}, {*admin, "admin_units"}}
	failed := false
	var summaries [2][]ingest.TableSummary
	for round, title := range []string{"first delivery", "second delivery of the same files (a duplicate)"} {
		fmt.Fprintf(m.Stdout, "%s:\n", title)
		tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', 0)
		for _, in := range inputs {
			res := m.ingestFile(ctx, svc, in.path, ingest.DefaultParams(in.target))
			detail := fmt.Sprintf("%d features", res.Features)
			if res.Err != nil {
				failed, detail = true, res.Err.Error()
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\tjob %s\t%s\n", res.Outcome, in.target, filepath.Base(in.path), short(res.JobID), detail)
		}
		tw.Flush()
		s, err := store.Summary(ctx)
		if err != nil {
			return err
		}
		summaries[round] = s
	}
	fmt.Fprintln(m.Stdout, "what landed (current generations):")
	tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  table\tfeatures\tjobs\tarea (ha)\t")
	for _, s := range summaries[1] {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%.2f\t\n", s.Target, s.Features, s.Jobs, s.AreaM2/1e4)
	}
	tw.Flush()
	unchanged := fmt.Sprint(summaries[0]) == fmt.Sprint(summaries[1])
	if unchanged {
		fmt.Fprintln(m.Stdout, "the second delivery changed nothing: every duplicate was stopped by a gate.")
	} else {
		fmt.Fprintln(m.Stdout, "the second delivery CHANGED the tables: this is a bug.")
	}
	if failed || !unchanged {
		return exitError(1)
	}
	return nil
}
