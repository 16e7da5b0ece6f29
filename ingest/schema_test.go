package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// schema20 is a schema of 20 columns and a mapping of each.
func schema20(t testing.TB) *Schema {
	var b strings.Builder
	b.WriteString("targets:\n  parcels:\n    columns:\n")
	types := []string{TypeText, TypeInt8, TypeNumeric, TypeBoolean, TypeDate}
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "      - {name: c%d, type: %s}\n", i, types[i%len(types)])
	}
	b.WriteString("mappings:\n  - name: m\n    target: parcels\n    fields:\n")
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "      c%d: {from: F%d}\n", i, i)
	}
	s, err := ParseSchema([]byte(b.String()))
	require.NoError(t, err)
	return s
}

func props20() []byte {
	var b strings.Builder
	b.WriteByte('{')
	vals := []string{`"0012345"`, `9007199254740993`, `"123.45"`, `"Y"`, `"2021-03-14"`}
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, `"F%d":%s,`, i, vals[i%len(vals)])
	}
	b.WriteString(`"EXTRA":"kept"}`)
	return []byte(b.String())
}

// TestMappingApply: a record of 20 columns and the extras; a route's
// mapping option round-trips; a cast failure names the field, the value
// and the column.
func TestMappingApply(t *testing.T) {
	m := schema20(t).Mapping("m")
	out, err := m.Apply(nil, props20())
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(out), `{"c0":"0012345","c1":9007199254740993,"c2":123.45,"c3":true,"c4":"2021-03-14","c5":"0012345"`), string(out))
	require.True(t, strings.HasSuffix(string(out), `"extras":{"EXTRA":"kept"}}`), string(out))
	out, err = m.Apply(nil, []byte(`{"F\u0031" : 7, "E\"x":1,"F0":" a "}`))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(out), `{"c0":" a ","c1":7,"c2":null,`), string(out))
	require.True(t, strings.HasSuffix(string(out), `,"c19":null,"extras":{"E\"x":1}}`), string(out))
	_, err = m.Apply(nil, []byte(`{"F1":"12x"}`))
	require.EqualError(t, err, `field F1 value "12x" does not cast to c1 int8: not a whole number within int8`)
	// What the stored columns cannot hold is a cast failure too, not a
	// failed job: a NUL in a text, a numeric beyond the stored range.
	_, err = m.Apply(nil, []byte(`{"F0":"a\u0000b"}`))
	require.ErrorContains(t, err, "does not cast to c0 text: a NUL character")
	_, err = m.Apply(nil, []byte(`{"F2":1e1001}`))
	require.ErrorContains(t, err, "does not cast to c2 numeric: beyond the numeric range")
	_, err = m.Apply(nil, []byte(`{"F2":"1e-1001"}`))
	require.ErrorContains(t, err, "beyond the numeric range")
	for _, ok := range []string{`1e999`, `-1.5e-999`, `0.` + strings.Repeat("0", 999) + `1`, strings.Repeat("9", 1000) + `.5`} {
		_, err = m.Apply(nil, []byte(`{"F2":`+ok+`}`))
		require.NoError(t, err, ok)
	}

	r, err := ParseRoute("counties/=parcels?mapping=m&key=c0")
	require.NoError(t, err)
	require.Equal(t, "m", r.Options.Mapping)
	require.Contains(t, r.String(), "mapping=m")
	p := r.Params(DefaultParams("parcels"))
	require.ErrorContains(t, p.Validate(), "no schema file")
	p.Schema = schema20(t)
	require.NoError(t, p.Validate())
	require.Equal(t, "m", p.Map()["mapping"].(map[string]any)["name"])
}

// BenchmarkMappingApply is the mapping's cost per feature of 20 columns,
// by one Applier over a stream (as a job maps).
func BenchmarkMappingApply(b *testing.B) {
	a := schema20(b).Mapping("m").Applier()
	props := props20()
	var out []byte
	b.SetBytes(int64(len(props)))
	for i := 0; i < b.N; i++ {
		var err error
		if out, err = a.Apply(out[:0], props); err != nil {
			b.Fatal(err)
		}
	}
}

// TestApplierRemembersKeys: one Applier, which remembers each key's
// columns by its place from the feature before, maps each of a run of
// features (the same keys with other values, other orders, escaped names,
// fewer and more keys, a value that does not cast, attributes that are not
// an object) as a new one does.
func TestApplierRemembersKeys(t *testing.T) {
	m := schema20(t).Mapping("m")
	base := string(props20())
	runs := []string{
		base,
		strings.Replace(base, `"0012345"`, `"42"`, 1),
		`{"F1":7,"F0":" a ","EXTRA":1}`,
		`{"F0":" a ","F1":7,"EXTRA":1}`,
		`{"F\u0030":" b ","F1":8,"EXTRA":2}`,
		`{"F0":" c ","F\u0031":9,"E\"x":3}`,
		`{"F0":" c ","F1":"12x"}`,
		`{"F0":" d ","F1":10}`,
		`{"F0":" d "}`,
		`{"EXTRA":1,"F0":"e","F1":11,"F2":"1.5","MORE":[1,{"a":2}]}`,
		`[1]`,
		`{"EXTRA":1,"F0":"e","F1":11,"F2":"1.5","MORE":null}`,
		base,
		`{}`,
		base,
	}
	a := m.Applier()
	var out []byte
	for n, p := range runs {
		var err error
		out, err = a.Apply(out[:0], []byte(p))
		want, wantErr := m.Apply(nil, []byte(p))
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) || string(out) != string(want) {
			t.Errorf("feature %d %s: %s, %v; a new Applier gives %s, %v", n, p, out, err, want, wantErr)
		}
	}
}

// TestMappedKeyNamesAColumn: under a mapping the key is read from the
// record, whose fields are the mapping's columns (the unmapped ones only
// inside extras). A key naming the source field (APN for a column apn),
// an unmapped field or @id matched no feature, silently: every later
// version was matched by content and overlap alone. It is refused, naming
// the columns.
func TestMappedKeyNamesAColumn(t *testing.T) {
	p := DefaultParams("parcels")
	p.Schema, p.Mapping = schema20(t), "m"
	p.Key = []string{"c0", "c3"}
	require.NoError(t, p.Validate())
	for key, want := range map[string]string{
		"F0":    `key field "F0": under mapping "m" the key names the mapping's columns: c0, c1,`,
		"EXTRA": `key field "EXTRA": under mapping "m"`,
		"@id":   `key field "@id": under mapping "m"`,
	} {
		p.Key = []string{"c0", key}
		err := p.Validate()
		require.ErrorContains(t, err, want, key)
		require.Equal(t, Permanent, KindOf(err), key)
	}
	p.Key = []string{"F0"}
	require.ErrorContains(t, p.Validate(), "(field F0 is the column c0)")
}

// TestSchemaRefusesAsOfParameterNames: schema check refuses a column that
// schema apply could not make (the as-of functions' own parameters,
// source_bucket and source_key), naming it, rather than passing the file
// that apply then fails on with an SQL error.
func TestSchemaRefusesAsOfParameterNames(t *testing.T) {
	for _, name := range []string{"source_bucket", "source_key", "job_id", "pipeline_version", "extras"} {
		_, err := ParseSchema([]byte("targets:\n  parcels:\n    columns:\n      - {name: " + name + ", type: text}\n"))
		require.ErrorContains(t, err, `column "`+name+`"`, name)
		require.True(t, IsReservedColumn(name), name)
	}
}

// TestSchemaRefusesFormatWithoutDate: a date or timestamptz format that
// does not read a whole date (year, month and day) in Go's reference time
// is refused by schema check, naming the mapping, the column and the
// format. "dd/mm/yyyy" passed, and every value of the column then failed
// to cast: every feature quarantined. A format without a year read dates
// in the year 0.
func TestSchemaRefusesFormatWithoutDate(t *testing.T) {
	schema := func(typ, format string) string {
		return "targets:\n  parcels:\n    columns:\n      - {name: d, type: " + typ + "}\n" +
			"mappings:\n  - name: m\n    target: parcels\n    fields:\n      d: {from: D, format: \"" + format + "\"}\n"
	}
	for _, f := range []string{"dd/mm/yyyy", "01/02", "01/01/2006", "2006-01", "15:04:05"} {
		for _, typ := range []string{TypeDate, TypeTimestamptz} {
			_, err := ParseSchema([]byte(schema(typ, f)))
			require.ErrorContains(t, err, `mapping m: column d: format "`+f+`"`, f)
		}
	}
	for _, f := range []string{"01/02/2006", "02.01.2006", "Jan 2, 2006", "20060102", "2006-002", "02/01/06", "2006-01-02T15:04:05Z07:00", "2006-01-02 15:04"} {
		for _, typ := range []string{TypeDate, TypeTimestamptz} {
			_, err := ParseSchema([]byte(schema(typ, f)))
			require.NoError(t, err, f)
		}
	}
}

// TestSchemaFileErrorsNameNoGoTypes: a misspelt key, a value of the wrong
// kind and an empty file are reported in the schema file's terms (the
// keys a target, column, mapping or field takes), not as Go's types
// ("field typ not found in type ingest.Column") or a bare "EOF".
func TestSchemaFileErrorsNameNoGoTypes(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"target: {}\n", "line 1: field target not found in the file (it takes targets, mappings)"},
		{"targets:\n  parcels:\n    colums: []\n", "line 3: field colums not found in a target (it takes columns)"},
		{"targets:\n  parcels:\n    columns:\n      - {name: a, typ: text}\n", "line 4: field typ not found in a column (it takes name, type)"},
		{"targets:\n  parcels:\n    columns:\n      - {name: a, type: text}\nmappings:\n  - name: m\n    targt: parcels\n", "line 7: field targt not found in a mapping (it takes name, target, fields)"},
		{"targets:\n  parcels:\n    columns:\n      - {name: a, type: text}\nmappings:\n  - name: m\n    target: parcels\n    fields:\n      a: {from: A, trimm: true}\n", "line 9: field trimm not found in a field's mapping (it takes from, trim, pad, format)"},
		{"targets:\n  parcels:\n    columns: {name: a, type: text}\n", "line 3: cannot unmarshal !!map into a list of columns"},
		{"", "empty: want targets: {parcels: {columns: [...]}}"},
		{"# nothing\n", "empty: want targets: {parcels: {columns: [...]}}"},
	} {
		_, err := ParseSchema([]byte(c.file))
		require.ErrorContains(t, err, c.want, c.file)
		require.NotContains(t, err.Error(), "ingest.", c.file)
	}
}

// TestSchemaNamesADuplicateMapping: a mapping name given twice is named
// ("mapping \"m\" given twice"), as a column given twice is; it said
// "mapping 2: want a name of its own", as for a mapping with no name.
func TestSchemaNamesADuplicateMapping(t *testing.T) {
	head := "targets:\n  parcels:\n    columns:\n      - {name: a, type: text}\nmappings:\n"
	_, err := ParseSchema([]byte(head + "  - {name: m, target: parcels, fields: {a: {from: A}}}\n  - {name: m, target: parcels, fields: {a: {from: B}}}\n"))
	require.EqualError(t, err, `mapping "m" given twice`)
	_, err = ParseSchema([]byte(head + "  - {target: parcels, fields: {a: {from: A}}}\n"))
	require.EqualError(t, err, `mapping 1: want name: NAME`)
}

// TestSchemaRefusesASecondDocument: a schema file of several YAML
// documents (separated by ---) is refused: only the first was read, and a
// mapping in the second was silently not there ("not a mapping of schema").
func TestSchemaRefusesASecondDocument(t *testing.T) {
	_, err := ParseSchema([]byte("targets:\n  parcels:\n    columns:\n      - {name: apn, type: text}\n---\nmappings:\n  - {name: m, target: parcels, fields: {apn: {from: APN}}}\n"))
	require.ErrorContains(t, err, "more than one YAML document (---): want one")
	// A document end marker, or a separator with nothing after it, is one document.
	_, err = ParseSchema([]byte("targets:\n  parcels:\n    columns:\n      - {name: apn, type: text}\n---\n# nothing\n"))
	require.NoError(t, err)
	_, err = ParseSchema([]byte("---\ntargets:\n  parcels:\n    columns:\n      - {name: apn, type: text}\n...\n"))
	require.NoError(t, err)
}
