package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/geoingest/geoingest/ingest"
)

func init() {
	register(&command{name: "quarantine", summary: "list, show or export the features a policy left out of a job", run: runQuarantine})
}

// runQuarantine is `geoingest quarantine list [JOB] | show JOB INDEX |
// export JOB [--format csv|geojson] [--output FILE]` (ingest/quarantine.go).
func runQuarantine(ctx context.Context, m *Main, args []string) error {
	sub := "list"
	if len(args) > 0 && (args[0] == "list" || args[0] == "show" || args[0] == "export") {
		sub, args = args[0], args[1:]
	}
	fs := m.flagSet("quarantine", "[list [JOB] | show JOB INDEX | export JOB] [--format table|json (list, show) | csv|geojson (export)] [--output FILE]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	format := fs.String("format", "", "list, show: table (default) or json; export: csv (default) or geojson")
	output := fs.String("output", "", "export: the file to write (default: standard output)")
	limit := fs.Int("limit", 100, "list: at most this many jobs")
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
	want := map[string][2]int{"list": {0, 1}, "show": {2, 2}, "export": {1, 1}}[sub]
	if len(pos) < want[0] || len(pos) > want[1] {
		fs.Usage()
		return errUsage
	}
	if sub == "export" {
		if *format == "" {
			*format = "csv"
		}
		if *format != "csv" && *format != "geojson" {
			return m.badFormat("quarantine", *format, "csv or geojson")
		}
	} else {
		if *format == "" {
			*format = "table"
		}
		if *format != "table" && *format != "json" {
			return m.badFormat("quarantine", *format, "table or json")
		}
	}
	var index int64
	if sub == "show" {
		var err error
		if index, err = strconv.ParseInt(pos[1], 10, 64); err != nil || index < 0 {
			fmt.Fprintf(m.Stderr, "geoingest quarantine: feature index %q: want the feature's index in its file (a number)\n", pos[1])
			return errUsage
		}
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	q, ok := a.store.(ingest.Quarantine)
	if !ok {
		return errors.New("this store keeps no quarantine")
	}
	if len(pos) > 0 {
		if pos[0], err = m.jobID(ctx, "quarantine "+sub, a.store, pos[0]); err != nil {
			return err
		}
	}
	out := func(v any) error { return writeJSON(m.Stdout, v) }
	noJob := func(err error) error {
		if errors.Is(err, ingest.ErrNoSuchJob) {
			fmt.Fprintf(m.Stderr, "geoingest quarantine %s: %v\n", sub, err)
			return exitError(1)
		}
		return err
	}
	switch {
	case sub == "list" && len(pos) == 0:
		js, err := q.QuarantinedJobs(ctx, *limit)
		if err != nil {
			return err
		}
		if *format == "json" {
			if js == nil {
				js = []ingest.QuarantineJob{}
			}
			return out(js)
		}
		tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', 0)
		defer tw.Flush()
		fmt.Fprintln(tw, "JOB\tSOURCE\tSTATUS\tLANDED\tQUARANTINED\tBY RULE")
		for _, j := range js {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", short(j.JobID), j.Source, j.Status, j.Features, j.Quarantined, ruleCounts(j.ByRule))
		}
		return nil
	case sub == "list" || sub == "show":
		p := ingest.FirstQuarantinePage(ingest.MaxPage)
		if sub == "show" {
			p.Index = index
		}
		var all []ingest.QuarantinedFeature
		for {
			page, err := q.QuarantinedFeatures(ctx, pos[0], p)
			if err != nil {
				return noJob(err)
			}
			all = append(all, page...)
			if len(page) < p.Limit {
				break
			}
			p.AfterLayer, p.AfterIndex = page[len(page)-1].Layer, page[len(page)-1].Index
		}
		if sub == "show" && len(all) == 0 {
			fmt.Fprintf(m.Stderr, "geoingest quarantine show: job %s has no feature %d in its quarantine\n", pos[0], index)
			return exitError(1)
		}
		if *format == "json" || sub == "show" {
			if all == nil {
				all = []ingest.QuarantinedFeature{}
			}
			return out(all)
		}
		tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', 0)
		defer tw.Flush()
		fmt.Fprintln(tw, "INDEX\tLAYER\tRULE\tREASON")
		for _, f := range all {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", f.Index, f.Layer, f.Rule, f.Reason)
		}
		return nil
	}
	// export
	page, err := q.QuarantinedFeatures(ctx, pos[0], ingest.FirstQuarantinePage(1))
	if err != nil {
		return noJob(err)
	}
	if len(page) == 0 {
		// Still the empty export, but not in silence.
		fmt.Fprintf(m.Stderr, "geoingest quarantine export: job %s has nothing in its quarantine: the export is empty\n", pos[0])
	}
	var w io.Writer = m.Stdout
	var f *os.File
	if *output != "" && *output != "-" {
		if f, err = os.Create(*output); err != nil {
			return err
		}
		w = f
	}
	err = ingest.ExportQuarantine(ctx, w, q, pos[0], *format)
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(*output)
		}
	}
	return noJob(err)
}

// ruleCounts is "rule n, rule n" in the rules' order.
func ruleCounts(m map[string]int64) string {
	rules := make([]string, 0, len(m))
	for r := range m {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	for i, r := range rules {
		rules[i] = fmt.Sprintf("%s %d", r, m[r])
	}
	return strings.Join(rules, ", ")
}
