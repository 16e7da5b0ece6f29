package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

func init() {
	register(&command{name: "history", summary: "the features as they were at a time: every source's count and area, or one source's features", run: runHistory})
}

// runHistory prints target's sources (or one source) as they were at
// --as-of (docs/changes.md, "History"): in a table or CSV each source's
// version then, its feature count and area; --format geojson the
// features themselves, with their feature ids; --format json both.
func runHistory(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("history", "[SOURCE] --as-of TIME [flags]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	asOf := fs.String("as-of", "", "the time: RFC 3339 (2026-01-31T00:00:00Z), a DATE (2026-01-31, midnight UTC) or a DURATION ago (720h)")
	target := fs.String("target", "parcels", "parcels or admin_units")
	format := fs.String("format", "table", "table, csv, json (counts and features) or geojson (the features)")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch *format {
	case "table", "csv", "json", "geojson":
	default:
		return m.badFormat("history", *format, "table, csv, json or geojson")
	}
	if !slices.Contains(ingest.Targets, *target) {
		fmt.Fprintf(m.Stderr, "geoingest history: --target %q: want %s\n", *target, strings.Join(ingest.Targets, " or "))
		return errUsage
	}
	switch {
	case *asOf == "":
		return usageError(fs, "--as-of TIME is needed: the time to read the history at (2026-01-31T00:00:00Z, 2026-01-31 or 720h)")
	case fs.NArg() > 1:
		return usageError(fs, fmt.Sprintf("one SOURCE at most, not %d", fs.NArg()))
	}
	at, err := ingest.ParseSince(*asOf, time.Now())
	if err != nil {
		fmt.Fprintf(m.Stderr, "geoingest history: --as-of: %v\n", err)
		return errUsage
	}
	var bucket, key string
	if fs.NArg() == 1 {
		if bucket, key = sourceArg(fs.Arg(0)); bucket == "" || key == "" {
			fmt.Fprintf(m.Stderr, "geoingest history: source %q: %s\n", fs.Arg(0), sourceArgUsage)
			return errUsage
		}
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	h, ok := a.store.(ingest.HistoryReader)
	if !ok {
		return errors.New("this store keeps no history")
	}
	srcs, err := h.AreaAsOf(ctx, *target, at, bucket, key)
	if err != nil {
		return err
	}
	if len(srcs) == 0 && key != "" {
		if err := requireKnownSource(ctx, a.store, fs.Arg(0), bucket, key); err != nil {
			return err
		}
	}
	var feats []ingest.FeatureAsOf
	if *format == "json" || *format == "geojson" {
		if feats, err = h.FeaturesAsOf(ctx, *target, at, bucket, key); err != nil {
			return err
		}
	}
	fc := func() map[string]any {
		out := make([]map[string]any, 0, len(feats))
		for _, f := range feats {
			out = append(out, map[string]any{"type": "Feature", "id": f.FeatureID, "geometry": rawOrNull(f.Geometry),
				"properties": map[string]any{"source": ingest.Source{Bucket: f.Bucket, Key: f.Key}.String(), "job": f.Job,
					"area_m2": f.AreaM2, "attributes": json.RawMessage(f.Props)}})
		}
		return map[string]any{"type": "FeatureCollection", "features": out}
	}
	p := changePrinter{m: m, format: *format}
	switch *format {
	case "geojson":
		return p.json(fc())
	case "json":
		if srcs == nil {
			srcs = []ingest.SourceAsOf{}
		}
		return p.json(map[string]any{"as_of": at.UTC(), "target_table": *target, "sources": srcs, "features": fc()})
	case "csv":
		w := csv.NewWriter(m.Stdout)
		_ = w.Write([]string{"source", "job", "features", "area_m2"})
		for _, s := range srcs {
			_ = w.Write([]string{ingest.Source{Bucket: s.Bucket, Key: s.Key}.String(), s.Job, itoa(s.Features), strconv.FormatFloat(s.AreaM2, 'f', 3, 64)})
		}
		w.Flush()
		return w.Error()
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "as of %s\n\nSOURCE\tVERSION\tFEATURES\tAREA (m²)\n", at.UTC().Format(time.RFC3339))
	for _, s := range srcs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\n", ingest.Source{Bucket: s.Bucket, Key: s.Key}, short(s.Job), s.Features, s.AreaM2)
	}
	return tw.Flush()
}
