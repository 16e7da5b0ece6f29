package ingest

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Exports of a job's quarantine, to send back to the uploader: CSV (one
// column per attribute the quarantined features have, then the rule, the
// reason and the geometry as GeoJSON) or a GeoJSON FeatureCollection
// (each feature's attributes with geoingest_rule, geoingest_reason and
// geoingest_layer added, geoingest_ before each again where an attribute
// has its name, its geometry in EPSG:4326, its index as its id).
// Both page through the quarantine: memory stays bounded whatever its size.

// ExportQuarantine writes jobID's quarantine to w in format (csv or
// geojson).
func ExportQuarantine(ctx context.Context, w io.Writer, q Quarantine, jobID, format string) error {
	switch format {
	case "csv":
		return exportQuarantineCSV(ctx, w, q, jobID)
	case "geojson":
		return exportQuarantineGeoJSON(ctx, w, q, jobID)
	}
	return Permanentf("quarantine export format %q: want csv or geojson", format)
}

// eachQuarantined calls f with every quarantined feature of jobID, in file
// order.
func eachQuarantined(ctx context.Context, q Quarantine, jobID string, f func(*QuarantinedFeature) error) error {
	p := FirstQuarantinePage(MaxPage)
	for {
		page, err := q.QuarantinedFeatures(ctx, jobID, p)
		if err != nil {
			return err
		}
		for i := range page {
			if err := f(&page[i]); err != nil {
				return err
			}
		}
		if len(page) < p.Limit {
			return nil
		}
		last := page[len(page)-1]
		p.AfterLayer, p.AfterIndex = last.Layer, last.Index
	}
}

func exportQuarantineCSV(ctx context.Context, w io.Writer, q Quarantine, jobID string) error {
	// First pass: the attributes' names.
	seen := map[string]bool{}
	var names []string
	if err := eachQuarantined(ctx, q, jobID, func(f *QuarantinedFeature) error {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(f.Properties, &m); err != nil {
			return fmt.Errorf("feature %d: properties: %w", f.Index, err)
		}
		for k := range m {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(names)
	cw := csv.NewWriter(w)
	fixed := fixedColumns(names, "index", "layer", "rule", "reason", "geometry")
	header := append(fixed[:4:4], names...)
	if err := cw.Write(append(header, fixed[4])); err != nil {
		return err
	}
	rec := make([]string, len(header)+1)
	if err := eachQuarantined(ctx, q, jobID, func(f *QuarantinedFeature) error {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(f.Properties, &m); err != nil {
			return fmt.Errorf("feature %d: properties: %w", f.Index, err)
		}
		rec[0], rec[1], rec[2], rec[3] = strconv.FormatInt(f.Index, 10), f.Layer, f.Rule, f.Reason
		for i, k := range names {
			rec[4+i] = csvValue(m[k])
		}
		rec[len(rec)-1] = ""
		if string(f.Geometry) != "null" {
			rec[len(rec)-1] = string(f.Geometry)
		}
		return cw.Write(rec)
	}); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// fixedColumns are the export's own columns, each named as given unless
// an attribute has that name (whatever its case: a spreadsheet's or a
// loader's column lookup may ignore it), then with geoingest_ before it
// (again while that is taken too): the header names every column once,
// and an attribute keeps its own name, the one the uploader's file has.
func fixedColumns(attrs []string, cols ...string) []string {
	taken := map[string]bool{}
	for _, a := range attrs {
		taken[strings.ToLower(a)] = true
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		for taken[strings.ToLower(c)] {
			c = "geoingest_" + c
		}
		taken[strings.ToLower(c)] = true
		out[i] = c
	}
	return out
}

// csvValue is a JSON value as a CSV cell: a string as itself (leading
// zeros kept), null or missing as empty, anything else as its JSON.
func csvValue(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	}
	return string(v)
}

func exportQuarantineGeoJSON(ctx context.Context, w io.Writer, q Quarantine, jobID string) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(`{"type":"FeatureCollection","features":[`)
	first := true
	if err := eachQuarantined(ctx, q, jobID, func(f *QuarantinedFeature) error {
		var props map[string]json.RawMessage
		if err := json.Unmarshal(f.Properties, &props); err != nil {
			return fmt.Errorf("feature %d: properties: %w", f.Index, err)
		}
		if props == nil {
			props = map[string]json.RawMessage{}
		}
		for _, kv := range [...][2]string{{"geoingest_rule", f.Rule}, {"geoingest_reason", f.Reason}, {"geoingest_layer", f.Layer}} {
			k := kv[0]
			for props[k] != nil { // the uploader's attribute keeps its name
				k = "geoingest_" + k
			}
			b, _ := json.Marshal(kv[1])
			props[k] = b
		}
		b, err := json.Marshal(struct {
			Type       string                     `json:"type"`
			ID         int64                      `json:"id"`
			Geometry   json.RawMessage            `json:"geometry"`
			Properties map[string]json.RawMessage `json:"properties"`
		}{"Feature", f.Index, f.Geometry, props})
		if err != nil {
			return err
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		_, err = bw.Write(append(b, '\n'))
		return err
	}); err != nil {
		return err
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}
