package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/geoingest/geoingest/ingest"
)

func init() {
	register(&command{name: "report", summary: "area report: parcels' area by admin unit (current generations only)", run: runReport})
}

// Report output formats.
var reportFormats = []string{"table", "csv", "json"}

// csvHeader is the CSV header of `report area`.
const csvHeader = "admin_unit,parcels,area_m2,area_ha"

// runReport runs `report area`: parcels' area summed by admin unit over
// the current generations of one pipeline version (see migration 0002).
// Exit status 0 on success, 2 for bad arguments, 1 when the database
// fails.
func runReport(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("report", "area [flags]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	method := fs.String("method", ingest.MethodPointOnSurface,
		"how parcels meet admin units: point-on-surface (whole parcels, to the unit containing ST_PointOnSurface) or intersection (parcels split by ST_Intersection)")
	adminKey := fs.String("admin-key", "name", "property of the admin units that names them (matched exactly, else case-insensitively)")
	version := fs.String("pipeline-version", "", "pipeline version to count (default: the newest with a current generation)")
	format := fs.String("format", "table", "output: "+strings.Join(reportFormats, ", "))
	if len(args) == 0 || args[0] != "area" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fs.Usage()
			return nil
		}
		fmt.Fprintln(m.Stderr, "geoingest report: want the report name: area")
		fs.Usage()
		return errUsage
	}
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	q := ingest.AreaQuery{Method: *method, AdminKey: *adminKey, PipelineVersion: *version}
	if err := q.Validate(); err != nil {
		fmt.Fprintf(m.Stderr, "geoingest report: %v\n", err)
		return errUsage
	}
	if !contains(reportFormats, *format) {
		fmt.Fprintf(m.Stderr, "geoingest report: --format %q: want one of %s\n", *format, strings.Join(reportFormats, ", "))
		return errUsage
	}
	if err := m.setupLog(&d); err != nil {
		return err
	}
	pool, err := m.openDB(ctx, &d)
	if err != nil {
		return err
	}
	defer pool.Close()
	store := ingest.NewStore(pool, nil, m.Log)
	if q.PipelineVersion == "" {
		// Resolve "the newest" once, so that the line below names the
		// version the numbers are for even if a new one lands meanwhile.
		if q.PipelineVersion, err = store.NewestPipelineVersion(ctx); err != nil {
			return err
		}
	}
	rows, err := store.AreaReport(ctx, q)
	if err != nil {
		return err
	}
	// What was counted, on stderr so that stdout stays the report alone.
	counted := "nothing: no source has a current generation"
	if q.PipelineVersion != "" {
		counted = fmt.Sprintf("the current generations of pipeline version %s", q.PipelineVersion)
	}
	fmt.Fprintf(m.Stderr, "geoingest report: parcel area by admin unit (%s, admin key %q), counting %s\n", q.Method, q.AdminKey, counted)
	switch *format {
	case "csv":
		return writeReportCSV(m.Stdout, rows)
	case "json":
		return writeReportJSON(m.Stdout, rows)
	default:
		return writeReportTable(m.Stdout, rows)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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

// writeReportJSON writes a JSON array of {admin_unit, parcels, area_m2,
// area_ha} objects ([] when there is no admin unit).
func writeReportJSON(w io.Writer, rows []ingest.AreaRow) error {
	if rows == nil {
		rows = []ingest.AreaRow{}
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// writeReportTable writes an aligned table: names left-aligned, numbers
// right-aligned, then a total line.
func writeReportTable(w io.Writer, rows []ingest.AreaRow) error {
	header := []string{"admin_unit", "parcels", "area_m2", "area_ha"}
	cells := [][]string{header}
	var parcels int64
	var m2, ha float64
	for _, r := range rows {
		cells = append(cells, []string{r.AdminUnit, strconv.FormatInt(r.Parcels, 10),
			strconv.FormatFloat(r.AreaM2, 'f', 1, 64), strconv.FormatFloat(r.AreaHa, 'f', 4, 64)})
		parcels += r.Parcels
		m2 += r.AreaM2
		ha += r.AreaHa
	}
	cells = append(cells, []string{"total", strconv.FormatInt(parcels, 10),
		strconv.FormatFloat(m2, 'f', 1, 64), strconv.FormatFloat(ha, 'f', 4, 64)})
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
