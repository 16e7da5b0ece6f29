package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/pgcluster"
)

func init() {
	register(&command{name: "demo", summary: "run the service on a local inbox of sample data, twice, and show that the second delivery changed nothing", run: runDemo})
}

// runDemo is the README's first command. It puts the sample parcels and
// admin units into a local inbox (inbox/parcels/, inbox/admin/), runs
// `serve` on it until idle, then restarts `serve` (a restart rescans and
// so redelivers every file) and shows what happened to each delivery,
// what landed, the area report and the reconciliation. It runs on the
// embedded default unless --database-url or DATABASE_URL is given. Exit
// status 1 if anything failed, the second delivery changed anything, or
// verification found a problem.
func runDemo(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("demo", "[--parcels FILE] [--admin FILE] [--inbox DIR]")
	var d dbFlags
	m.addDBFlagsLevel(fs, &d, "none")
	parcels := fs.String("parcels", "testdata/synthetic/parcels_10k.geojson", "parcels to put into the inbox's parcels/ folder")
	admin := fs.String("admin", "testdata/synthetic/admin.geojson", "admin units to put into the inbox's admin/ folder")
	inbox := fs.String("inbox", "", "inbox directory (default: demo-inbox beside the embedded cluster's data)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *inbox == "" {
		home := filepath.Dir(pgcluster.DefaultDir())
		if h := m.Getenv("GEOINGEST_HOME"); h != "" {
			home = h
		}
		*inbox = filepath.Join(home, "demo-inbox")
	}
	// A stable inbox: the sources (and so the jobs) of a second demo run are
	// the same as the first's, and are duplicates too.
	for _, f := range []struct{ src, sub string }{{*parcels, "parcels"}, {*admin, "admin"}} {
		if err := copyIfChanged(f.src, filepath.Join(*inbox, f.sub, filepath.Base(f.src))); err != nil {
			return err
		}
	}
	fmt.Fprintf(m.Stdout, "inbox %s: parcels/%s, admin/%s\n", *inbox, filepath.Base(*parcels), filepath.Base(*admin))

	// The demo's files are complete before serve starts (copyIfChanged
	// writes them first), so no settle interval is needed: two scans
	// that agree are enough.
	serveArgs := []string{"--inbox", *inbox, "--until-idle", "1500ms", "--poll", "200ms", "--settle", "0s", "--workers", "2",
		"--metrics-addr", "", "--log-level", d.logLevel, "--log-format", d.logFormat}
	if d.databaseURL != "" {
		serveArgs = append(serveArgs, "--database-url", d.databaseURL)
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	store := a.store

	var summaries [2][]ingest.TableSummary
	for round, title := range []string{"first delivery (serve, until idle)", "second delivery (serve restarted: it rescans and redelivers every file)"} {
		fmt.Fprintf(m.Stdout, "\n%s:\n  ", title)
		if err := runServe(ctx, m, serveArgs); err != nil {
			return err
		}
		if summaries[round], err = store.Summary(ctx); err != nil {
			return err
		}
	}

	fmt.Fprintln(m.Stdout, "\nwhat landed (current generations):")
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

	v, err := store.Verify(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "\ngeoingest verify: %s\n", verdictLine(v))
	fmt.Fprintln(m.Stdout, "\nnext: geoingest report area    (parcel area by admin unit, current generations only)")
	if !unchanged || !v.OK() {
		return exitError(1)
	}
	return nil
}

func verdictLine(v *ingest.Verification) string {
	if v.OK() {
		return "clean: every committed job's features are present exactly once"
	}
	return fmt.Sprintf("%s in jobs %v", plural(len(v.Problems), "problem"), v.OffendingJobs())
}

// copyIfChanged copies src to dst unless dst already has the same bytes.
func copyIfChanged(src, dst string) error {
	want, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if have, err := os.ReadFile(dst); err == nil && bytes.Equal(have, want) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, bytes.NewReader(want)); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
