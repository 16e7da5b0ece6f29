package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/reportsvg"
)

func init() {
	register(&command{name: "report", summary: "area report by admin unit (current generations only), admin-layer check, refresh", run: runReport})
}

// Report output formats.
var reportFormats = []string{"table", "csv", "json", "svg"}

// csvHeader is the CSV header of `report area`.
const csvHeader = "admin_unit,parcels,area_m2,area_ha"

// reportUsage names the subcommands.
const reportUsage = `area [flags] | admin-check [flags] | refresh [flags]

  area         parcel area by admin unit, with the admin-layer check
  admin-check  the admin-layer check alone (exit 1 when it finds a problem)
  refresh      bring the report assignments up to date (also done after every job)`

// runReport runs `report area`, `report admin-check` and `report refresh`.
func runReport(ctx context.Context, m *Main, args []string) error {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch sub {
	case "area":
		return runReportArea(ctx, m, args[1:])
	case "admin-check":
		return runAdminCheck(ctx, m, args[1:])
	case "refresh":
		return runReportRefresh(ctx, m, args[1:])
	}
	fs := m.flagSet("report", reportUsage)
	if sub == "-h" || sub == "--help" {
		fs.Usage()
		return nil
	}
	fmt.Fprintln(m.Stderr, "geoingest report: want area, admin-check or refresh")
	fs.Usage()
	return errUsage
}

// runReportArea runs `report area`: parcels' area summed by admin unit
// over the current generations of one pipeline version (see migrations
// 0002 and 0006), with a total from the ledger and the admin-layer check.
// What was counted, whether the rows add up to the total and every
// admin-layer problem go to stderr; stdout is the report alone. It first
// refreshes the report assignments (a warning if that fails: the report is
// exact without them, only slower). Exit status 0 on success, also over a
// broken admin layer; 2 for bad arguments; 1 when the database fails.
func runReportArea(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("report area", "[flags]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	m.addReadFlag(fs, &d)
	method := fs.String("method", ingest.MethodPointOnSurface,
		"how parcels meet admin units: point-on-surface (whole parcels, to the unit containing ST_PointOnSurface; on a shared boundary the lowest unit id) or intersection (parcels split by ST_Intersection)")
	adminKey := fs.String("admin-key", "name", "property of the admin units that names them (matched exactly, else case-insensitively)")
	version := fs.String("pipeline-version", "", "pipeline version to count (default: the newest with a current generation)")
	format := fs.String("format", "table", "output: "+strings.Join(reportFormats, ", ")+" (svg: a choropleth map of the units)")
	noRefresh := fs.Bool("no-refresh", false, "do not refresh the report assignments first")
	asOf := fs.String("as-of", "", "the report as it was at a time, from the history: RFC 3339 (2026-01-31T00:00:00Z), a DATE (2026-01-31, midnight UTC) or a DURATION ago (720h); no map")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	q := ingest.AreaQuery{Method: *method, AdminKey: *adminKey, PipelineVersion: *version, Shapes: *format == "svg"}
	if *asOf != "" {
		at, err := ingest.ParseSince(*asOf, time.Now())
		if err != nil {
			fmt.Fprintf(m.Stderr, "geoingest report: --as-of: %v\n", err)
			return errUsage
		}
		q.AsOf, *noRefresh = at, true // nothing of that time is stored
	}
	if err := q.Validate(); err != nil {
		return m.badParams("report", err)
	}
	if !slices.Contains(reportFormats, *format) {
		return m.badFormat("report", *format, "one of "+strings.Join(reportFormats, ", "))
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	store := a.store
	if !*noRefresh {
		if _, err := store.RefreshReports(ctx); err != nil {
			fmt.Fprintf(m.Stderr, "geoingest report: warning: report assignments not refreshed (the report computes what is missing): %v\n", err)
		}
	}
	// The refresh writes on the primary; the report reads the replica
	// when there is one (it computes what the replica has not replayed).
	r, err := a.reads().AreaReport(ctx, q)
	if err != nil {
		return err
	}
	// What was counted, on stderr so that stdout stays the report alone.
	counted := "nothing: no source has a current generation"
	switch {
	case r.PipelineVersion != "" && r.AsOf != nil:
		counted = fmt.Sprintf("the generations of pipeline version %s current at %s", r.PipelineVersion, r.AsOf.Format(time.RFC3339))
	case r.PipelineVersion != "":
		counted = fmt.Sprintf("the current generations of pipeline version %s", r.PipelineVersion)
	}
	fmt.Fprintf(m.Stderr, "geoingest report: parcel area by admin unit (%s, admin key %q), counting %s\n", q.Method, q.AdminKey, counted)
	parcels := "the current parcels"
	if r.AsOf != nil {
		parcels = "the parcels current at " + r.AsOf.Format(time.RFC3339)
	}
	if r.Reconciled {
		fmt.Fprintf(m.Stderr, "geoingest report: the rows add up to the total of %s (%d parcels, %.1f m²)\n", parcels, r.Total.Parcels, r.Total.AreaM2)
	} else {
		fmt.Fprintf(m.Stderr, "geoingest report: WARNING: the rows do not add up to the total of %s (%d parcels, %.1f m²): difference %+.3f m²\n",
			parcels, r.Total.Parcels, r.Total.AreaM2, r.Difference)
	}
	writeCheckProblems(m, r.Check)
	switch *format {
	case "csv":
		return writeReportCSV(m.Stdout, r.Rows)
	case "json":
		return writeJSON(m.Stdout, r)
	case "svg":
		return reportsvg.Write(m.Stdout, r)
	default:
		return writeReportTable(m.Stdout, r)
	}
}

// writeCheckProblems says on stderr what is wrong with the admin layer.
func writeCheckProblems(m *Main, c *ingest.AdminCheck) {
	if c == nil || c.OK {
		return
	}
	fmt.Fprintf(m.Stderr, "geoingest report: WARNING: the admin layer (pipeline version %s) has %s:\n", c.PipelineVersion, plural(len(c.Problems), "problem"))
	for _, p := range c.Problems {
		fmt.Fprintf(m.Stderr, "geoingest report:   %s\n", p)
	}
}

// runAdminCheck runs `report admin-check`: duplicate keys, overlapping
// units and coverage gaps of one pipeline version's admin layer. Exit
// status 0 when it finds nothing, 1 when it finds a problem (listed on
// stdout) or the database fails, 2 for bad arguments.
func runAdminCheck(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("report admin-check", "[flags]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	m.addReadFlag(fs, &d)
	adminKey := fs.String("admin-key", "name", "property of the admin units that names them")
	version := fs.String("pipeline-version", "", "pipeline version to check (default: the newest with a current generation)")
	format := fs.String("format", "text", "output: text or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 || (*format != "text" && *format != "json") {
		fs.Usage()
		return errUsage
	}
	q := ingest.AreaQuery{AdminKey: *adminKey}
	if err := q.Validate(); err != nil {
		return m.badParams("report", err)
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	store := a.store
	if _, err := store.RefreshReports(ctx); err != nil {
		fmt.Fprintf(m.Stderr, "geoingest report: warning: report assignments not refreshed: %v\n", err)
	}
	c, err := a.reads().CheckAdmin(ctx, q.AdminKey, *version)
	if err != nil {
		return err
	}
	if *format == "json" {
		if err := writeJSON(m.Stdout, c); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(m.Stdout, "admin layer of pipeline version %s: %d units, admin key %q\n", c.PipelineVersion, c.Units, c.AdminKey)
		for _, p := range c.Problems {
			fmt.Fprintln(m.Stdout, p)
		}
		if c.OK {
			fmt.Fprintln(m.Stdout, "ok: no duplicate keys, no overlapping units, no parcel outside every unit")
		} else {
			fmt.Fprintf(m.Stdout, "FAILED: %s\n", plural(len(c.Problems), "problem"))
		}
	}
	if !c.OK {
		return exitError(1)
	}
	return nil
}

// runReportRefresh runs `report refresh`: Store.RefreshReports, then says
// what it did. Exit status 1 when the database fails.
func runReportRefresh(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("report refresh", "[flags]")
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
	r, err := a.store.RefreshReports(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "report assignments: %s\n", r)
	return nil
}

// writeReportCSV writes the header csvHeader and one record per unit;
// areas in metres to 0.01 m² and hectares to 0.000001 ha.
func writeReportCSV(w io.Writer, rows []ingest.AreaRow) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(strings.Split(csvHeader, ","))
	for _, r := range rows {
		_ = cw.Write([]string{r.AdminUnit, strconv.FormatInt(r.Parcels, 10),
			strconv.FormatFloat(r.AreaM2, 'f', 2, 64), strconv.FormatFloat(r.AreaHa, 'f', 6, 64)})
	}
	cw.Flush()
	return cw.Error()
}

// writeReportTable writes an aligned table: names left-aligned, numbers
// right-aligned, then a total line: the current parcels as the ledger
// records them (for point-on-surface the rows add up to it).
func writeReportTable(w io.Writer, rep *ingest.Report) error {
	header := []string{"admin_unit", "parcels", "area_m2", "area_ha"}
	cells := [][]string{header}
	for _, r := range append(rep.Rows, rep.Total) {
		cells = append(cells, []string{r.AdminUnit, strconv.FormatInt(r.Parcels, 10),
			strconv.FormatFloat(r.AreaM2, 'f', 1, 64), strconv.FormatFloat(r.AreaHa, 'f', 4, 64)})
	}
	width := make([]int, len(header))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for n, row := range cells {
		if n == len(cells)-1 {
			for i := range width {
				if i > 0 {
					b.WriteString("  ")
				}
				b.WriteString(strings.Repeat("-", width[i]))
			}
			b.WriteString("\n")
		}
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			switch {
			case i == 0:
				b.WriteString(c + pad)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
