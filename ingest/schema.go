package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/geoingest/geoingest/geomio/jsonscan"
	"go.yaml.in/yaml/v3"
)

// The typed schema (docs/schema.md): a declarative file (YAML or JSON,
// --schema FILE or GEOINGEST_SCHEMA) that gives each target its typed
// columns, and names mappings from a source's fields to those columns. A
// job under a mapping (route option mapping=NAME, --mapping NAME) stores
// each feature's attributes as the mapping's record: the columns' values,
// cast and normalised, under the columns' names, and the fields it does
// not map under "extras". Each typed column is also a real column of the
// target's feature table (geoingest schema apply adds it, online), which
// the job's COPY fills from the record (ingest/postgis/typed.go); the
// views geoingest_typed_parcels and geoingest_typed_admin_units expose
// them to clients (QGIS, ogr2ogr, SQL). A value that does not
// cast puts its feature in the quarantine (RuleCast): it never becomes
// NULL in silence.

// Column types of the schema.
const (
	TypeText        = "text"
	TypeInt8        = "int8"
	TypeNumeric     = "numeric"
	TypeBoolean     = "boolean"
	TypeDate        = "date"
	TypeTimestamptz = "timestamptz"
)

var columnTypes = map[string]bool{TypeText: true, TypeInt8: true, TypeNumeric: true, TypeBoolean: true, TypeDate: true, TypeTimestamptz: true}

// RuleCast: a mapped field's value does not cast to its column's type.
const RuleCast = "cast"

// ExtrasKey is the key of the unmapped fields in a mapped record.
const ExtrasKey = "extras"

// Schema is a parsed schema file.
type Schema struct {
	// Targets maps a target table to its typed columns, in order.
	Targets map[string]TargetSchema `yaml:"targets" json:"targets"`
	// Mappings are the named mappings from a source's fields.
	Mappings []Mapping `yaml:"mappings" json:"mappings"`
	// File is the file it was read from.
	File string `yaml:"-" json:"-"`
}

// TargetSchema is one target's typed columns.
type TargetSchema struct {
	Columns []Column `yaml:"columns" json:"columns"`
}

// Column is one typed column.
type Column struct {
	Name string `yaml:"name" json:"name"`
	Type string `yaml:"type" json:"type"`
}

// Mapping maps a source's fields to a target's columns.
type Mapping struct {
	Name   string `yaml:"name" json:"name"`
	Target string `yaml:"target" json:"target"`
	// Fields maps a column to the source field it takes its value from,
	// with the transforms that apply.
	Fields map[string]FieldMap `yaml:"fields" json:"fields"`

	columns []mappedColumn   // in the target's column order
	from    map[string][]int // each source field's columns (Apply)
	names   [][]byte         // each column's `"name":` in its record (Apply)
}

// FieldMap is where one column's value comes from.
type FieldMap struct {
	// From is the source field (its name in the file).
	From string `yaml:"from" json:"from"`
	// Trim strips surrounding white space from a text value first.
	Trim bool `yaml:"trim,omitempty" json:"trim,omitempty"`
	// Format is the layout of a date or timestamptz value, in Go's
	// reference time (2006-01-02, 01/02/2006, 2006-01-02T15:04:05Z07:00);
	// default ISO 8601.
	Format string `yaml:"format,omitempty" json:"format,omitempty"`
	// Pad zero-pads a text code of digits to this width (a county's
	// "42" to "00042").
	Pad int `yaml:"pad,omitempty" json:"pad,omitempty"`
}

type mappedColumn struct {
	Column
	FieldMap
}

// identifier is a column name geoingest accepts: lower-case, as
// PostgreSQL folds an unquoted one, so that analysts need no quotes.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// reservedColumns are the typed views' own columns and the feature
// tables' (the typed columns are stored beside them), and the typed
// as-of functions' (source_bucket, source_key: schema apply cannot
// create a function with a column of either name).
var reservedColumns = map[string]bool{"id": true, "job_id": true, "job_ref": true, "feature_index": true, "layer": true,
	"properties": true, "geom": true, "area_m2": true, "feature_id": true, "pipeline_version": true, ExtrasKey: true,
	"match_key": true, "geom_hash": true, "props_hash": true, "raw_hash": true, "source_bucket": true, "source_key": true}

// LoadSchema reads and checks a schema file.
func LoadSchema(path string) (*Schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, Permanentf("schema: %w", err)
	}
	s, err := ParseSchema(b)
	if err != nil {
		return nil, Permanentf("schema %s: %w", path, err)
	}
	s.File = path
	return s, nil
}

// ParseSchema parses a schema (YAML, or JSON, which is YAML) and checks it.
func ParseSchema(b []byte) (*Schema, error) {
	var s Schema
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty: want targets: {parcels: {columns: [...]}}")
		}
		return nil, errors.New(yamlTerms.Replace(err.Error()))
	}
	// A second document would be ignored, and what it says with it.
	for {
		var more yaml.Node
		err := dec.Decode(&more)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || !emptyDocument(&more) {
			return nil, errors.New("more than one YAML document (---): want one")
		}
	}
	return &s, s.check()
}

// emptyDocument reports whether n, a decoded YAML document, holds nothing
// (a --- with only comments after it).
func emptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n.Kind == 0 || n.Kind == yaml.DocumentNode && len(n.Content) == 0 ||
		n.Kind == yaml.ScalarNode && n.Tag == "!!null" && (n.Value == "" || n.Value == "~" || n.Value == "null")
}

// yamlTerms puts the decoder's errors in the schema file's terms: the
// keys each part of it takes, not the Go types it is decoded into.
var yamlTerms = strings.NewReplacer(
	"in type ingest.Schema", "in the file (it takes targets, mappings)",
	"in type ingest.TargetSchema", "in a target (it takes columns)",
	"in type ingest.Column", "in a column (it takes name, type)",
	"in type ingest.Mapping", "in a mapping (it takes name, target, fields)",
	"in type ingest.FieldMap", "in a field's mapping (it takes from, trim, pad, format)",
	"into []ingest.Column", "into a list of columns",
	"into []ingest.Mapping", "into a list of mappings",
	"into map[string]ingest.TargetSchema", "into targets (a map of target to its columns)",
	"into map[string]ingest.FieldMap", "into fields (a map of column to its field)",
	"into ingest.Schema", "into a schema (targets, mappings)",
	"into ingest.TargetSchema", "into a target (columns)",
	"into ingest.Column", "into a column ({name: NAME, type: TYPE})",
	"into ingest.Mapping", "into a mapping (name, target, fields)",
	"into ingest.FieldMap", "into a field's mapping ({from: FIELD, ...})",
)

func (s *Schema) check() error {
	if len(s.Targets) == 0 {
		return fmt.Errorf("no targets: want targets: {parcels: {columns: [...]}}")
	}
	for t, ts := range s.Targets {
		if !validTarget(t) {
			return fmt.Errorf("target %q: want one of %v", t, Targets)
		}
		seen := map[string]bool{}
		for _, c := range ts.Columns {
			if !identifier.MatchString(c.Name) {
				return fmt.Errorf("target %s: column %q: want a lower-case name (letters, digits, _), not one of the views' own", t, c.Name)
			}
			if reservedColumns[c.Name] {
				return fmt.Errorf("target %s: column %q: a name of the typed views' or their as-of functions' own columns: give it another", t, c.Name)
			}
			if seen[c.Name] {
				return fmt.Errorf("target %s: column %q given twice", t, c.Name)
			}
			seen[c.Name] = true
			if !columnTypes[c.Type] {
				return fmt.Errorf("target %s: column %s: type %q: want text, int8, numeric, boolean, date or timestamptz", t, c.Name, c.Type)
			}
		}
	}
	names := map[string]bool{}
	for i := range s.Mappings {
		m := &s.Mappings[i]
		if m.Name == "" {
			return fmt.Errorf("mapping %d: want name: NAME", i+1)
		}
		if names[m.Name] {
			return fmt.Errorf("mapping %q given twice", m.Name)
		}
		names[m.Name] = true
		ts, ok := s.Targets[m.Target]
		if !ok {
			return fmt.Errorf("mapping %s: target %q has no columns in the schema", m.Name, m.Target)
		}
		m.columns = nil
		for _, c := range ts.Columns {
			f, ok := m.Fields[c.Name]
			if !ok {
				continue
			}
			if f.From == "" {
				return fmt.Errorf("mapping %s: column %s: want from: FIELD", m.Name, c.Name)
			}
			if f.Format != "" && c.Type != TypeDate && c.Type != TypeTimestamptz {
				return fmt.Errorf("mapping %s: column %s: format is for date and timestamptz columns", m.Name, c.Name)
			}
			if f.Format != "" && !readsDate(f.Format) {
				return fmt.Errorf("mapping %s: column %s: format %q reads no whole date (year, month and day): write it in Go's reference time, such as 02/01/2006 for day/month/year", m.Name, c.Name, f.Format)
			}
			if f.Pad != 0 && (c.Type != TypeText || f.Pad < 0 || f.Pad > 64) {
				return fmt.Errorf("mapping %s: column %s: pad is a width (1 to 64) for text columns", m.Name, c.Name)
			}
			m.columns = append(m.columns, mappedColumn{c, f})
		}
		m.index()
		for col := range m.Fields {
			found := false
			for _, c := range ts.Columns {
				found = found || c.Name == col
			}
			if !found {
				return fmt.Errorf("mapping %s: column %q is not a column of %s", m.Name, col, m.Target)
			}
		}
	}
	return nil
}

// readsDate reports whether layout, a date or timestamptz format, reads
// back the year, the month and the day of a date it wrote: a layout in
// another notation ("dd/mm/yyyy") or missing a part ("01/02") would
// fail every value, or read them all into the year 0.
func readsDate(layout string) bool {
	d := time.Date(2021, time.November, 23, 0, 0, 0, 0, time.UTC)
	p, err := time.Parse(layout, d.Format(layout))
	return err == nil && p.Year() == d.Year() && p.Month() == d.Month() && p.Day() == d.Day()
}

// Mapping returns the mapping named name, nil when there is none.
func (s *Schema) Mapping(name string) *Mapping {
	if s == nil {
		return nil
	}
	for i := range s.Mappings {
		if s.Mappings[i].Name == name {
			return &s.Mappings[i]
		}
	}
	return nil
}

// Spec is the mapping as the job's parameters record it (and key it by):
// its name, target and each mapped column with its type and transforms.
func (m *Mapping) Spec() map[string]any {
	cols := make([]any, len(m.columns))
	for i, c := range m.columns {
		e := map[string]any{"column": c.Name, "type": c.Type, "from": c.From}
		if c.Trim {
			e["trim"] = true
		}
		if c.Format != "" {
			e["format"] = c.Format
		}
		if c.Pad != 0 {
			e["pad"] = c.Pad
		}
		cols[i] = e
	}
	return map[string]any{"name": m.Name, "target": m.Target, "columns": cols}
}

// Columns are the columns the mapping fills, in the target's order: the
// order of the values in its record (Apply), and the typed columns a
// job under it writes.
func (m *Mapping) Columns() []Column {
	out := make([]Column, len(m.columns))
	for i, c := range m.columns {
		out[i] = c.Column
	}
	return out
}

// CheckKey refuses a feature-matching key (key fields) that names
// anything but the mapping's columns: under a mapping the key is read
// from the record, which holds the columns (the unmapped fields only
// inside extras), so such a key would match no feature, silently. The
// error names the columns, and the column a source field maps to.
func (m *Mapping) CheckKey(key []string) error {
	var cols []string
	for _, c := range m.Columns() {
		cols = append(cols, c.Name)
	}
	for _, k := range key {
		if slices.Contains(cols, k) {
			continue
		}
		hint := ""
		for _, c := range m.columns {
			if c.From == k {
				hint = fmt.Sprintf(" (field %s is the column %s)", k, c.Name)
				break
			}
		}
		return Permanentf("key field %q: under mapping %q the key names the mapping's columns: %s%s",
			k, m.Name, strings.Join(cols, ", "), hint)
	}
	return nil
}

// SourceFields are the source fields the mapping reads, for the drift
// guard: a version that has none of a mapped field has drifted.
func (m *Mapping) SourceFields() []string {
	out := make([]string, 0, len(m.columns))
	for _, c := range m.columns {
		out = append(out, c.From)
	}
	return out
}

// Digest is a short hash of the mapping's spec.
func (m *Mapping) Digest() string {
	b, _ := json.Marshal(m.Spec())
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// CastError is a mapped value that does not cast to its column's type.
type CastError struct {
	Column, Field, Type, Value string
	Why                        string
}

func (e *CastError) Error() string {
	return fmt.Sprintf("field %s value %s does not cast to %s %s%s", e.Field, e.Value, e.Column, e.Type, e.Why)
}

// Apply maps props, a feature's attributes (a JSON object), to the
// mapping's record, appended to out: the columns in order (null when the
// field is missing, null or an empty text), then "extras" with the fields
// not mapped, in the file's order. A value that does not cast is a
// *CastError. One pass over props; the caller reuses out. A stream of
// features is mapped cheaper by one Applier.
func (m *Mapping) Apply(out, props []byte) ([]byte, error) {
	return m.Applier().Apply(out, props)
}

// An Applier maps a stream of features' attributes with one mapping
// (Apply), in one goroutine. It remembers which columns each key took in
// the feature before, by its place: a file's features most often have
// the same keys in the same order, and a key then costs a comparison of
// its bytes rather than a lookup by name. It writes the extras apart, with
// no allocation once warm for a field whose name has no escape.
type Applier struct {
	m      *Mapping
	prev   []appliedKey
	extras []byte
	spans  []int32 // the last record's (Spans), nil after a failure
	spanAt []int32 // spans' buffer
}

// Spans is where the last record Apply wrote has its values, as [start,
// end) pairs of offsets from the record's first byte: each column's, in
// the mapping's column order (Columns), then the extras object's. It is
// valid until the next Apply, nil after one that failed.
func (a *Applier) Spans() []int32 { return a.spans }

// appliedKey is the key at one place of the feature before: its raw JSON
// text and its columns (mapped false: an extra).
type appliedKey struct {
	raw    []byte
	cols   []int
	mapped bool
}

// Applier returns a new Applier of m.
func (m *Mapping) Applier() *Applier { return &Applier{m: m} }

// Apply is Mapping.Apply.
func (a *Applier) Apply(out, props []byte) ([]byte, error) {
	return a.ApplyMembers(out, props, nil)
}

// ApplyMembers is Apply of props whose members are where members says
// (geomio.Feature.Members: the key's opening quote, the value's start and
// end, for each; the reader's contract): it takes each member from there
// instead of scanning props for it. A key that is not where members says
// has props scanned, as nil members do. TestApplyMembersAsApply holds the
// two to the same records, spans and errors.
func (a *Applier) ApplyMembers(out, props []byte, members []int32) ([]byte, error) {
	if len(members)%3 != 0 {
		members = nil
	}
	m := a.m
	var small [32][]byte
	vals := small[:0:0] // each column's raw value, nil: missing
	if len(m.columns) <= len(small) {
		vals = small[:len(m.columns)]
	} else {
		vals = make([][]byte, len(m.columns))
	}
	start := len(out)
	a.spans = nil
	extras := a.extras[:0]
	n := 0
	i := jsonscan.SkipSpace(props, 0)
	if i >= len(props) || props[i] != '{' {
		return out, notObject()
	}
	i++
	for k := 0; ; k++ {
		var rawKey, val []byte
		var end int
		var escaped bool
		if members != nil {
			// The member where the reader wrote it: "key":value.
			if 3*k >= len(members) {
				break
			}
			ks, vs, ve := int(members[3*k]), int(members[3*k+1]), int(members[3*k+2])
			if ks < 0 || ks+2 > vs-1 || ve < vs || ve > len(props) || props[ks] != '"' || props[vs-2] != '"' || props[vs-1] != ':' {
				return a.ApplyMembers(out[:start], props, nil)
			}
			rawKey, val, end = props[ks:vs-1], props[vs:ve], vs-2
			i = ks
		} else {
			i = jsonscan.SkipSpace(props, i)
			if i >= len(props) || props[i] != '"' {
				break // '}' (or malformed: geomio gives JSON objects)
			}
			end, escaped = jsonscan.StringEnd(props, i)
			if end < 0 {
				return out, notObject()
			}
			end-- // the closing quote
			rawKey = props[i : end+1]
		}
		var cols []int
		var mapped bool
		if k < len(a.prev) && bytes.Equal(a.prev[k].raw, rawKey) {
			cols, mapped = a.prev[k].cols, a.prev[k].mapped
		} else {
			if members != nil {
				escaped = bytes.IndexByte(rawKey, '\\') >= 0
			}
			if escaped {
				name, err := unescapeKey(rawKey)
				if err != nil {
					return out, notObject()
				}
				cols, mapped = m.from[name]
			} else {
				cols, mapped = m.from[string(props[i+1:end])]
			}
			if k == len(a.prev) {
				a.prev = append(a.prev, appliedKey{})
			}
			if k < len(a.prev) {
				a.prev[k] = appliedKey{raw: append(a.prev[k].raw[:0], rawKey...), cols: cols, mapped: mapped}
			}
		}
		vend := 0
		if members == nil {
			i = jsonscan.SkipSpace(props, end+1)
			if i >= len(props) || props[i] != ':' {
				return out, notObject()
			}
			i = jsonscan.SkipSpace(props, i+1)
			if i >= len(props) {
				return out, notObject()
			}
			if vend = jsonscan.SkipValue(props, i); vend < 0 {
				return out, notObject()
			}
			val = props[i:vend]
		}
		if mapped {
			for _, c := range cols {
				vals[c] = val
			}
		} else {
			if n > 0 {
				extras = append(extras, ',')
			}
			n++
			extras = append(extras, rawKey...)
			extras = append(extras, ':')
			extras = append(extras, val...)
		}
		if members == nil {
			i = jsonscan.SkipSpace(props, vend)
			if i < len(props) && props[i] == ',' {
				i++
			}
		}
	}
	a.extras = extras
	spans := a.spanAt[:0]
	out = append(out, '{')
	for c, col := range m.columns {
		out = append(out, m.names[c]...)
		vs := len(out) - start
		var err error
		if out, err = col.cast(out, vals[c], vals[c] != nil); err != nil {
			return out[:start], err
		}
		spans = append(spans, int32(vs), int32(len(out)-start))
		out = append(out, ',')
	}
	out = append(out, `"extras":`...)
	vs := len(out) - start
	out = append(out, '{')
	out = append(out, extras...)
	out = append(out, '}')
	a.spanAt = append(spans, int32(vs), int32(len(out)-start))
	a.spans = a.spanAt
	return append(out, '}'), nil
}

// notObject is Apply's error for attributes that are not a JSON object.
func notObject() error { return &CastError{Why: ": attributes are not a JSON object"} }

// unescapeKey is the field name of rawKey, a JSON string with escapes
// (on the heap: apart, so that Apply's other keys are not).
func unescapeKey(rawKey []byte) (string, error) {
	var name string
	err := json.Unmarshal(rawKey, &name)
	return name, err
}

// index builds m.from: each source field's columns (check, before any
// Apply: jobs share the mapping).
func (m *Mapping) index() {
	m.from = make(map[string][]int, len(m.columns))
	m.names = make([][]byte, len(m.columns))
	for i, c := range m.columns {
		m.from[c.From] = append(m.from[c.From], i)
		m.names[i] = append(appendJSONString(nil, c.Name), ':')
	}
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, UTF-8 as it is.
func appendJSONString[S string | []byte](out []byte, s S) []byte {
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c < 0x20:
			out = append(out, fmt.Sprintf("\\u%04x", c)...)
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// short is a value for an error message: at most 40 bytes.
func short(v []byte) string {
	if len(v) > 40 {
		return string(v[:40]) + "..."
	}
	return string(v)
}

// castErr is c's CastError for raw.
func (c mappedColumn) castErr(raw []byte, why string) error {
	return &CastError{Column: c.Name, Field: c.From, Type: c.Type, Value: short(raw), Why: why}
}

// columnsOf lists a target's columns as "name type", for the views.
func (s *Schema) columnsOf(target string) []Column {
	return s.Targets[target].Columns
}

// ViewColumns is the target's typed columns as the typed view's spec (a
// JSON array of {name, type}).
func (s *Schema) ViewColumns(target string) ([]byte, error) {
	cols := s.columnsOf(target)
	if cols == nil {
		cols = []Column{}
	}
	return json.Marshal(cols)
}

// TargetNames are the schema's targets, in Targets' order.
func (s *Schema) TargetNames() []string {
	var out []string
	for _, t := range Targets {
		if _, ok := s.Targets[t]; ok {
			out = append(out, t)
		}
	}
	return out
}

// IsReservedColumn reports whether name is one of the typed views' own
// columns, which a schema may not use.
func IsReservedColumn(name string) bool { return reservedColumns[name] }
