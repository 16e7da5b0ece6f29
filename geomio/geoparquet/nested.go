package geoparquet

import (
	"encoding/json"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// nestedProp assembles one top-level group column (a list, a map, a
// struct, nested in any way) of a row from its leaf columns' values and
// their repetition and definition levels, as Parquet's record assembly
// does, and writes it as JSON: lists (the LIST annotation and its legacy
// forms, repeated fields) as arrays, maps (MAP) as objects, structs as
// objects in schema order, leaves as the flat columns are converted.
// parquet-go's own reconstruction into a map panics on the three-level
// lists with optional elements that Arrow and pyarrow write.
type nestedProp struct {
	node   parquet.Field
	leaves []nestedLeaf
}

// nestedLeaf is one leaf column under the group: its column index, the
// nodes from the group down to it, and its converter.
type nestedLeaf struct {
	col  int
	path []parquet.Field
	conv converter
}

// newNestedProp describes the top-level field f, whose leaf columns
// start at column index first (in the schema's depth-first order).
func newNestedProp(f parquet.Field, first int) *nestedProp {
	p := &nestedProp{node: f}
	col := first
	var walk func(n parquet.Field, path []parquet.Field)
	walk = func(n parquet.Field, path []parquet.Field) {
		path = append(path[:len(path):len(path)], n)
		if n.Leaf() {
			p.leaves = append(p.leaves, nestedLeaf{col: col, path: path, conv: converterOf(n.Type())})
			col++
			return
		}
		for _, c := range n.Fields() {
			walk(c, path)
		}
	}
	walk(f, nil)
	return p
}

// leafCount is how many leaf columns the field n has.
func leafCount(n parquet.Field) int {
	if n.Leaf() {
		return 1
	}
	k := 0
	for _, c := range n.Fields() {
		k += leafCount(c)
	}
	return k
}

// appendJSON assembles the field's value from cols (a row's values by
// column index) and appends it to b as JSON.
func (p *nestedProp) appendJSON(b []byte, cols [][]parquet.Value) []byte {
	var root any
	for _, l := range p.leaves {
		if l.col >= len(cols) {
			continue
		}
		idx := make([]int, len(l.path)+1) // current element per repetition level
		for _, v := range cols[l.col] {
			r := v.RepetitionLevel()
			if r == 0 {
				clear(idx)
			} else if r < len(idx) {
				idx[r]++
				clear(idx[r+1:])
			}
			var raw json.RawMessage
			if !v.IsNull() {
				raw = l.conv(nil, v)
			}
			place(&root, l.path, 0, 0, 0, v.DefinitionLevel(), idx, raw)
		}
	}
	return appendNode(b, p.node, root)
}

// place puts one leaf value into the tree at *slot, for path[k:], given
// the definition and repetition levels of the nodes above (def, rep), the
// value's definition level d and the current element of each repeated
// level (idx). A node the value does not reach (d below its level) is
// null, or an empty list when repeated.
func place(slot *any, path []parquet.Field, k, def, rep, d int, idx []int, val json.RawMessage) {
	n := path[k]
	switch {
	case n.Repeated():
		def++
		rep++
	case n.Optional():
		def++
	}
	if d < def {
		if n.Repeated() && *slot == nil {
			*slot = []any{}
		}
		return
	}
	if n.Repeated() {
		list, _ := (*slot).([]any)
		i := 0
		if rep < len(idx) {
			i = idx[rep]
		}
		for len(list) <= i {
			list = append(list, nil)
		}
		*slot = list
		slot = &list[i]
	}
	if k == len(path)-1 {
		*slot = val
		return
	}
	m, _ := (*slot).(map[string]any)
	if m == nil {
		m = map[string]any{}
		*slot = m
	}
	name := path[k+1].Name()
	v := m[name]
	place(&v, path, k+1, def, rep, d, idx, val)
	m[name] = v
}

// appendNode writes v, the assembled value of node n, as JSON.
func appendNode(b []byte, n parquet.Field, v any) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	if n.Repeated() {
		list, _ := v.([]any)
		b = append(b, '[')
		for i, e := range list {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendOne(b, n, e)
		}
		return append(b, ']')
	}
	return appendOne(b, n, v)
}

// appendOne writes one (non-repeated) value of node n as JSON.
func appendOne(b []byte, n parquet.Field, v any) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	if n.Leaf() {
		raw, _ := v.(json.RawMessage)
		if raw == nil {
			return append(b, "null"...)
		}
		return append(b, raw...)
	}
	m, _ := v.(map[string]any)
	fields := n.Fields()
	if len(fields) == 1 && fields[0].Repeated() && (isList(n) || isMap(n)) {
		rep := fields[0]
		list, _ := m[rep.Name()].([]any)
		if isMap(n) && !rep.Leaf() && len(rep.Fields()) == 2 {
			key, val := rep.Fields()[0], rep.Fields()[1]
			b = append(b, '{')
			for i, e := range list {
				if i > 0 {
					b = append(b, ',')
				}
				em, _ := e.(map[string]any)
				k := appendNode(nil, key, em[key.Name()])
				if s, err := strconv.Unquote(string(k)); err == nil && len(k) > 0 && k[0] == '"' {
					k = []byte(s)
				}
				kb, _ := json.Marshal(string(k))
				b = append(b, kb...)
				b = append(b, ':')
				b = appendNode(b, val, em[val.Name()])
			}
			return append(b, '}')
		}
		b = append(b, '[')
		for i, e := range list {
			if i > 0 {
				b = append(b, ',')
			}
			// The LIST rules: a repeated group of one field is the
			// element's wrapper ("list" holding "element"), unless it
			// is named "array" or NAME_tuple (the legacy forms where the
			// group is the element).
			if !rep.Leaf() && len(rep.Fields()) == 1 && rep.Name() != "array" && rep.Name() != n.Name()+"_tuple" {
				em, _ := e.(map[string]any)
				b = appendNode(b, rep.Fields()[0], em[rep.Fields()[0].Name()])
			} else {
				b = appendOne(b, rep, e)
			}
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(f.Name())
		b = append(b, kb...)
		b = append(b, ':')
		b = appendNode(b, f, m[f.Name()])
	}
	return append(b, '}')
}

func isList(n parquet.Field) bool {
	if lt := n.Type().LogicalType(); lt != nil {
		if _, ok := lt.Value.(*format.ListType); ok {
			return true
		}
	}
	ct := n.Type().ConvertedType()
	return ct != nil && *ct == deprecated.List
}

func isMap(n parquet.Field) bool {
	if lt := n.Type().LogicalType(); lt != nil {
		if _, ok := lt.Value.(*format.MapType); ok {
			return true
		}
	}
	ct := n.Type().ConvertedType()
	return ct != nil && (*ct == deprecated.Map || *ct == deprecated.MapKeyValue)
}
