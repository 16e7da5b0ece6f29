package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

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
	state := fs.String("state", "", "list: a claim state (CLAIMED, COMMITTED, FAILED), a ledger status (current, superseded, replaced, retired, deleted, pending, rejected) or a console state (failed, in-flight, lease-expired, committed)")
	source := fs.String("source", "", "list, sources: only sources whose key starts with this (or under s3://BUCKET/PREFIX, file:///DIR/)")
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
		return m.badFormat("jobs", *format, "table or json")
	}
	if *limit <= 0 {
		*limit = 100
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
	asJSON := func(v any) error { return writeJSON(m.Stdout, v) }
	tw := tabwriter.NewWriter(m.Stdout, 2, 4, 2, ' ', 0)
	defer tw.Flush()

	switch sub {
	case "show":
		id, err := m.jobID(ctx, "jobs show", store, rest[0])
		if err != nil {
			return err
		}
		rec, err := store.ConsoleJob(ctx, id)
		if errors.Is(err, ingest.ErrNoSuchJob) {
			return fmt.Errorf("job %s: %w", id, err)
		}
		if err != nil {
			return err
		}
		j := detailOf(rec)
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
			row("features", fmt.Sprintf("%d, %.2f m² (skipped: %d null, %d wrong type, %d cast; %d repaired)", j.Features, j.AreaM2, j.SkippedNull, j.SkippedType, j.SkippedCast, j.RepairedInvalid))
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
		ss, err := listSources(ctx, store, *source, *limit)
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
		js, err := listJobs(ctx, store, ingest.JobQuery{State: *state, Source: *source}, *limit)
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

// jobs reads the one read model of jobs (ingest.ConsoleReader), as the
// console does; what follows is the command's output, whose fields and
// JSON names are its own and stay as they were.

// jobRow is a job as `jobs list` prints it.
type jobRow struct {
	JobID           string    `json:"job_id"`
	ClaimState      string    `json:"claim_state"`      // CLAIMED, COMMITTED, FAILED
	Status          string    `json:"status,omitempty"` // ledger status, "" before commit
	Source          string    `json:"source"`
	Target          string    `json:"target_table,omitempty"`
	PipelineVersion string    `json:"pipeline_version,omitempty"`
	Features        int64     `json:"features"`
	AreaM2          float64   `json:"area_m2"`
	Attempts        int32     `json:"attempts"`
	LastError       string    `json:"last_error,omitempty"`
	UpdatedAt       time.Time `json:"updated_at"`
}

func rowOf(j ingest.JobSummary) jobRow {
	r := jobRow{JobID: j.JobID, ClaimState: j.ClaimState, Source: j.Source, Target: j.Target,
		PipelineVersion: j.PipelineVersion, Features: j.Features, AreaM2: j.AreaM2, Attempts: j.Attempts,
		LastError: j.Reason, UpdatedAt: j.UpdatedAt}
	if j.ClaimState == "COMMITTED" && j.State != ingest.StateCommitted {
		r.Status = j.State // a committed job's state is its ledger status
	}
	return r
}

// jobDetail is a job as `jobs show` prints it.
type jobDetail struct {
	jobRow
	Owner            string            `json:"owner"`
	LeaseUntil       time.Time         `json:"lease_until"`
	CreatedAt        time.Time         `json:"created_at"`
	VersionToken     string            `json:"version_token,omitempty"`
	OrderToken       string            `json:"order_token,omitempty"`
	Params           json.RawMessage   `json:"params,omitempty"`
	ContentHash      string            `json:"content_hash,omitempty"`
	Encoding         string            `json:"encoding,omitempty"`
	SkippedNull      int64             `json:"skipped_null"`
	SkippedType      int64             `json:"skipped_type"`
	SkippedCast      int64             `json:"skipped_cast"`
	RepairedInvalid  int64             `json:"repaired_invalid"`
	LinearisedCurves int64             `json:"linearised_curves"`
	DroppedZM        int64             `json:"dropped_zm"`
	CommittedAt      *time.Time        `json:"committed_at,omitempty"`
	SourceCurrentJob string            `json:"source_current_job_id,omitempty"`
	CRS              []ingest.LayerCRS `json:"crs,omitempty"`
}

func detailOf(rec ingest.JobRecord) jobDetail {
	d := jobDetail{jobRow: rowOf(rec.Job), Owner: rec.Claim.Owner, LeaseUntil: rec.Claim.LeaseUntil,
		CreatedAt: rec.Claim.ClaimedAt}
	if l := rec.Ledger; l != nil {
		d.Status = l.Status
		d.VersionToken, d.OrderToken, d.Params, d.ContentHash, d.Encoding = l.VersionToken, l.OrderToken, l.Params, l.ContentHash, l.Encoding
		d.SkippedNull, d.SkippedType, d.SkippedCast, d.RepairedInvalid = l.SkippedNull, l.SkippedType, l.SkippedCast, l.RepairedInvalid
		d.LinearisedCurves, d.DroppedZM = l.LinearisedCurves, l.DroppedZM
		d.CommittedAt, d.SourceCurrentJob, d.CRS = &l.CommittedAt, l.SourceCurrentJob, rec.CRS
	}
	return d
}

// listJobs reads up to limit jobs q selects, the most recently claimed
// first, page by page.
func listJobs(ctx context.Context, r ingest.ConsoleReader, q ingest.JobQuery, limit int) ([]jobRow, error) {
	out := []jobRow{}
	for len(out) < limit {
		q.Limit = min(limit-len(out), ingest.MaxPage)
		page, err := r.ConsoleJobs(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, j := range page.Jobs {
			out = append(out, rowOf(j))
		}
		if q.Cursor = page.Next; q.Cursor == "" {
			break
		}
	}
	return out, nil
}

// listSources reads up to limit sources under source, the most recently
// changed first, page by page.
func listSources(ctx context.Context, r ingest.ConsoleReader, source string, limit int) ([]ingest.SourceInfo, error) {
	out := []ingest.SourceInfo{}
	q := ingest.SourceQuery{Source: source, History: 1}
	for len(out) < limit {
		q.Limit = min(limit-len(out), ingest.MaxPage)
		page, err := r.ConsoleSources(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, s := range page.Sources {
			out = append(out, s.SourceInfo)
		}
		if q.Cursor = page.Next; q.Cursor == "" {
			break
		}
	}
	return out, nil
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
