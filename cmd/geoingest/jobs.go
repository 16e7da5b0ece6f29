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
	register(&command{name: "jobs", summary: "list and show jobs and sources: state, generation, counts, failure reasons", run: runJobs})
}

// runJobs is `geoingest jobs [list|show JOB_ID|sources] [flags]`. Exit
// status 1 when `show` names a job nobody has claimed.
func runJobs(ctx context.Context, m *Main, args []string) error {
	isSub := func(a string) bool { return a == "list" || a == "show" || a == "sources" }
	sub, named := "list", false
	if len(args) > 0 && isSub(args[0]) {
		sub, args, named = args[0], args[1:], true
	}
	fs := m.flagSet("jobs", "[list|show JOB_ID|sources] [--state S] [--source PREFIX] [--limit N] [--format table|json]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	m.addReadFlag(fs, &d)
	state := fs.String("state", "", "list: a claim state (CLAIMED, COMMITTED, FAILED) or a ledger status (current, superseded, replaced, retired, deleted)")
	source := fs.String("source", "", "list, sources: only sources whose key starts with this")
	limit := fs.Int("limit", 100, "list, sources: at most this many rows")
	format := fs.String("format", "table", "table or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if !named && len(rest) > 0 && isSub(rest[0]) {
		// Flags came first: `jobs --format json show ID`.
		sub, rest = rest[0], rest[1:]
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("--format %q: want table or json", *format)
	}
	if (sub == "show") != (len(rest) == 1) || len(rest) > 1 {
		fs.Usage()
		return errUsage
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	store := a.reads()
	asJSON := func(v any) error {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', 0)
	defer tw.Flush()

	switch sub {
	case "show":
		j, err := store.ShowJob(ctx, rest[0])
		if errors.Is(err, ingest.ErrNoSuchJob) {
			return fmt.Errorf("job %s: %w", rest[0], err)
		}
		if err != nil {
			return err
		}
		if *format == "json" {
			return asJSON(j)
		}
		row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
		row("job", j.JobID)
		row("source", j.Source)
		row("claim", fmt.Sprintf("%s (owner %s, %d attempts, lease until %s)", j.ClaimState, j.Owner, j.Attempts, j.LeaseUntil.Format("2006-01-02 15:04:05Z07:00")))
		if j.LastError != "" {
			row("last error", j.LastError)
		}
		if j.Status != "" {
			generation := "not the source's current generation"
			if j.SourceCurrentJob == j.JobID {
				generation = "the source's current generation"
			} else if j.SourceCurrentJob != "" {
				generation += " (current: " + j.SourceCurrentJob + ")"
			}
			row("status", j.Status+": "+generation)
			row("target", fmt.Sprintf("%s, pipeline version %s", j.Target, j.PipelineVersion))
			row("features", fmt.Sprintf("%d, %.2f m² (skipped: %d null, %d wrong type; %d repaired)", j.Features, j.AreaM2, j.SkippedNull, j.SkippedType, j.RepairedInvalid))
			row("geometries", fmt.Sprintf("%d with curves linearised, %d with Z/M dropped", j.LinearisedCurves, j.DroppedZM))
			row("version", fmt.Sprintf("%s (order %s)", j.VersionToken, j.OrderToken))
			row("content", j.ContentHash)
			if j.Encoding != "" {
				row("encoding", j.Encoding)
			}
			for _, c := range j.CRS {
				crsRows(row, c, len(j.CRS) > 1)
			}
			row("params", string(j.Params))
			if j.CommittedAt != nil {
				row("committed", j.CommittedAt.Format("2006-01-02 15:04:05.000Z07:00"))
			}
		}
		return nil
	case "sources":
		ss, err := store.ListSources(ctx, *source, int32(*limit))
		if err != nil {
			return err
		}
		if *format == "json" {
			return asJSON(ss)
		}
		fmt.Fprintln(tw, "SOURCE\tTARGET\tPIPELINE\tCURRENT JOB\tGENERATIONS\tFEATURES\tAREA (m²)")
		for _, s := range ss {
			cur := short(s.CurrentJob)
			if s.CurrentJob == "" {
				cur = "(none)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%.0f\n", s.Source, s.Target, s.PipelineVersion, cur, s.Generations, s.Features, s.AreaM2)
		}
		return nil
	default:
		js, err := store.ListJobs(ctx, ingest.JobFilter{State: *state, SourcePrefix: *source, Limit: int32(*limit)})
		if err != nil {
			return err
		}
		if *format == "json" {
			return asJSON(js)
		}
		fmt.Fprintln(tw, "JOB\tCLAIM\tSTATUS\tSOURCE\tTARGET\tFEATURES\tUPDATED\tERROR")
		for _, j := range js {
			status := j.Status
			if status == "" {
				status = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", short(j.JobID), j.ClaimState, status, j.Source, j.Target,
				j.Features, j.UpdatedAt.Format("2006-01-02 15:04:05"), j.LastError)
		}
		return nil
	}
}

// crsRows prints the CRS a layer was read in: how it was found, what
// PostGIS transformed with, and the file's own text.
func crsRows(row func(k string, v any), c ingest.LayerCRS, named bool) {
	key := "crs"
	if named {
		key = "crs (" + c.Layer + ")"
	}
	var what string
	switch c.Method {
	case "custom":
		what = fmt.Sprintf("custom %q, registered as SRID %d", c.Name, c.SRID)
	case "identified":
		what = fmt.Sprintf("EPSG:%d %s, identified by PROJ at %d %%", c.EPSG, c.Name, deref(c.Confidence))
	case "authority":
		what = fmt.Sprintf("EPSG:%d %s, named by the file", c.EPSG, c.Name)
	case "override":
		what = fmt.Sprintf("EPSG:%d, given by --source-srid", c.EPSG)
	case "default":
		what = fmt.Sprintf("EPSG:%d, GeoJSON without crs (RFC 7946)", c.EPSG)
	default:
		what = fmt.Sprintf("%s, SRID %d", c.Method, c.SRID)
	}
	row(key, what)
	if c.Transformation != "" {
		row("  to WGS 84", c.Transformation)
	}
	if c.Definition != "" {
		row("  definition", c.Definition)
	}
	if c.SourceText != "" {
		row("  file's text", strings.Join(strings.Fields(c.SourceText), " "))
	}
	if c.GeometryField != "" {
		row("  geometry field", c.GeometryField)
	}
	if named && (c.LinearisedCurves > 0 || c.DroppedZM > 0) {
		row("  geometries", fmt.Sprintf("%d with curves linearised, %d with Z/M dropped", c.LinearisedCurves, c.DroppedZM))
	}
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
