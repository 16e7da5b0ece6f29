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

// BenchmarkMappingApply is the mapping's cost per feature of 20 columns.
func BenchmarkMappingApply(b *testing.B) {
	m := schema20(b).Mapping("m")
	props := props20()
	var out []byte
	b.SetBytes(int64(len(props)))
	for i := 0; i < b.N; i++ {
		var err error
		if out, err = m.Apply(out[:0], props); err != nil {
			b.Fatal(err)
		}
	}
}
