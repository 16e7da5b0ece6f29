package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// The typed schema a file suggests (inspect --suggest-schema,
// docs/schema.md): each field's values decide its column's type, without
// losing anything:
//   - a string stays text (a code's leading zeros with it), unless every
//     value is an ISO date (date) or an RFC 3339 timestamp (timestamptz);
//   - whole numbers are int8 (beyond int32 or not: an id of 3,000,000,000
//     fits), other numbers numeric, never a float;
//   - booleans are boolean; anything mixed is text;
//   - a field with an object or an array among its values gets no column
//     (text refuses them): unmapped, it stays in the record's extras.

// SuggestedColumn is one column a layer's field suggests.
type SuggestedColumn struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Field string `json:"from"`
	// Why says what the values were.
	Why string `json:"why"`
}

// fieldValues is what the values of one field were.
type fieldValues struct {
	order                             int
	strings, numbers, bools, complexN int64
	fractional, beyondInt32           bool
	leadingZero                       bool
	dates, stamps                     int64
}

type suggester struct {
	fields map[string]*fieldValues
	n      int
}

var isoDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func (s *suggester) add(props []byte) {
	if s.fields == nil {
		s.fields = map[string]*fieldValues{}
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return
	}
	// Fields in a stable order of first sight: sorted within a feature.
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fv := s.fields[k]
		if fv == nil {
			fv = &fieldValues{order: s.n}
			s.n++
			s.fields[k] = fv
		}
		switch v := m[k].(type) {
		case nil:
		case bool:
			fv.bools++
		case json.Number:
			fv.numbers++
			if i, err := strconv.ParseInt(string(v), 10, 64); err != nil {
				fv.fractional = true
			} else if i > 1<<31-1 || i < -1<<31 {
				fv.beyondInt32 = true
			}
		case string:
			if v == "" {
				continue
			}
			fv.strings++
			if len(v) > 1 && v[0] == '0' && v[1] >= '0' && v[1] <= '9' {
				fv.leadingZero = true
			}
			if isoDate.MatchString(v) {
				if _, err := time.Parse("2006-01-02", v); err == nil {
					fv.dates++
				}
			} else if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
				fv.stamps++
			}
		default:
			fv.complexN++
		}
	}
}

// columns returns the suggested columns, in the order the fields were
// first seen.
func (s *suggester) columns() []SuggestedColumn {
	names := make([]string, 0, len(s.fields))
	for k := range s.fields {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return s.fields[names[i]].order < s.fields[names[j]].order })
	used := map[string]bool{}
	var out []SuggestedColumn
	for _, f := range names {
		v := s.fields[f]
		if v.complexN > 0 {
			continue // no column takes an object or an array: left in extras
		}
		c := SuggestedColumn{Field: f, Name: columnName(f, used)}
		kinds := 0
		for _, n := range []int64{v.strings, v.numbers, v.bools, v.complexN} {
			if n > 0 {
				kinds++
			}
		}
		switch {
		case kinds == 0:
			c.Type, c.Why = ingest.TypeText, "every value null or empty"
		case kinds > 1:
			c.Type, c.Why = ingest.TypeText, "values of several kinds"
		case v.bools > 0:
			c.Type, c.Why = ingest.TypeBoolean, "booleans"
		case v.numbers > 0 && v.fractional:
			c.Type, c.Why = ingest.TypeNumeric, "decimal numbers (numeric keeps every digit)"
		case v.numbers > 0 && v.beyondInt32:
			c.Type, c.Why = ingest.TypeInt8, "whole numbers beyond int32"
		case v.numbers > 0:
			c.Type, c.Why = ingest.TypeInt8, "whole numbers"
		case v.dates == v.strings:
			c.Type, c.Why = ingest.TypeDate, "ISO dates"
		case v.stamps == v.strings:
			c.Type, c.Why = ingest.TypeTimestamptz, "RFC 3339 timestamps"
		case v.leadingZero:
			c.Type, c.Why = ingest.TypeText, "text with leading zeros (kept)"
		default:
			c.Type, c.Why = ingest.TypeText, "text"
		}
		out = append(out, c)
	}
	return out
}

// columnName is a column name for field: lower case, letters, digits and
// _, not a view's own column, not used yet.
func columnName(field string, used map[string]bool) string {
	var b strings.Builder
	for _, r := range strings.ToLower(field) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	n := b.String()
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		n = "f_" + n
	}
	if len(n) > 60 {
		n = n[:60]
	}
	if sqlReserved[n] {
		// A reserved word (order, group, user, ...) would want quotes in
		// every analyst's SQL: the schema's names are the ones that need
		// none (docs/schema.md).
		n += "_"
	}
	base := n
	for i := 2; used[n] || ingest.IsReservedColumn(n); i++ {
		n = fmt.Sprintf("%s_%d", base, i)
	}
	used[n] = true
	return n
}

// sqlReserved are PostgreSQL's key words that a column name cannot be
// without quotes (pg_get_keywords() catcode R, reserved, and T, reserved
// but a function or type name), as of PostgreSQL 17: a column of the
// typed views named so would have to be written "order" in every query.
// TestSuggestedNamesNeedNoQuotes holds the list to the server's.
var sqlReserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric
		authorization binary both case cast check collate collation column concurrently
		constraint create cross current_catalog current_date current_role current_schema
		current_time current_timestamp current_user default deferrable desc distinct do else
		end except false fetch for foreign freeze from full grant group having ilike in
		initially inner intersect into is isnull join lateral leading left like limit
		localtime localtimestamp natural not notnull null offset on only or order outer
		overlaps placing primary references returning right select session_user similar some
		symmetric system_user table tablesample then to trailing true union unique user using
		variadic verbose when where window with`) {
		sqlReserved[w] = true
	}
}

// mappingName is a suggested mapping's name from a file's base name: its
// letters, digits, '_', '-' and '.', anything else as '_', so that the
// name can be given as it is to a route's mapping= option (which a '&',
// a ',' in GEOINGEST_ROUTES, a space or a '?' would cut short) or to
// --mapping.
func mappingName(base string) string {
	var b strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "mapping"
	}
	return b.String()
}

// yamlName is a column name as the schema file writes it: plain, but
// quoted where YAML would read the plain scalar as something else (a
// boolean or a null such as yes, off or ~; a number: YAML 1.1, which the
// decoder follows there, reads _1 as 1).
func yamlName(n string) string {
	switch n {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return strconv.Quote(n)
	}
	if n == "" || n[0] == '_' {
		return strconv.Quote(n)
	}
	return n
}

// SuggestSchema is the schema file the report's layers suggest, as YAML:
// the target's columns and a mapping named name from their fields.
func SuggestSchema(rep *Report, name string) string {
	var b strings.Builder
	cols := map[string]SuggestedColumn{}
	var order []string
	for _, l := range rep.Layers {
		for _, c := range l.Suggested {
			if _, ok := cols[c.Name]; !ok {
				cols[c.Name] = c
				order = append(order, c.Name)
			}
		}
	}
	name = mappingName(name)
	fmt.Fprintf(&b, "# suggested by geoingest inspect --suggest-schema from %s\ntargets:\n  %s:\n    columns:\n", rep.Source, rep.Target)
	for _, n := range order {
		c := cols[n]
		fmt.Fprintf(&b, "      - {name: %s, type: %s}  # %s\n", yamlName(c.Name), c.Type, c.Why)
	}
	fmt.Fprintf(&b, "mappings:\n  - name: %s\n    target: %s\n    fields:\n", strconv.Quote(name), rep.Target)
	for _, n := range order {
		fmt.Fprintf(&b, "      %s: {from: %s}\n", yamlName(n), strconv.Quote(cols[n].Field))
	}
	return b.String()
}
