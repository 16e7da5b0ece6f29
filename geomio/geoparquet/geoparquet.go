// Package geoparquet reads GeoParquet files (https://geoparquet.org, 1.0
// and 1.1): the `geo` file metadata, and the rows streamed one small batch
// at a time, each as its geometry's WKB and its other columns as a JSON
// object. It decodes neither the geometry nor the CRS: package geomio
// does, so that every format shares one WKB decoder and one CRS resolver.
//
// Memory is flat: rows are read through parquet-go's row group readers,
// which hold one page per column, batchRows rows at a time; the file is
// never read whole. Errors are plain errors describing the problem (the
// caller names the file); a panic inside parquet-go on a corrupt file is
// recovered and returned as an error.
package geoparquet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Magic is the four bytes a Parquet file starts and ends with.
const Magic = "PAR1"

// batchRows is how many rows are read from a row group at a time.
const batchRows = 64

// Metadata is the `geo` key of the file's key-value metadata.
type Metadata struct {
	Version       string            `json:"version"`
	PrimaryColumn string            `json:"primary_column"`
	Columns       map[string]Column `json:"columns"`
}

// Column describes one geometry column.
type Column struct {
	// Encoding is "WKB" (the only one geoingest reads) or a GeoArrow
	// native encoding ("point", "polygon", ...).
	Encoding string `json:"encoding"`
	// GeometryTypes are the types the column declares ("Polygon",
	// "MultiPolygon Z", ...); empty means any.
	GeometryTypes []string `json:"geometry_types"`
	// CRS is the column's CRS as PROJJSON; absent means OGC:CRS84 and an
	// explicit null means unknown (see HasCRS, CRSNull).
	CRS json.RawMessage `json:"crs"`
	// BBox is the declared extent [xmin, ymin, xmax, ymax] (or with z).
	BBox []float64 `json:"bbox"`
	// Covering names the columns that hold each row's bounding box.
	Covering *struct {
		BBox map[string][]string `json:"bbox"`
	} `json:"covering"`

	crsPresent bool
}

// UnmarshalJSON records whether the crs member is present at all: an
// absent crs is OGC:CRS84, a null one an unknown CRS.
func (c *Column) UnmarshalJSON(b []byte) error {
	type plain Column
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	_, p.crsPresent = members["crs"]
	*c = Column(p)
	return nil
}

// CRSAbsent reports whether the column has no crs member: OGC:CRS84,
// longitude and latitude on WGS 84.
func (c Column) CRSAbsent() bool { return !c.crsPresent }

// CRSNull reports whether the crs member is an explicit null: the
// producer does not know the CRS.
func (c Column) CRSNull() bool {
	return c.crsPresent && (len(c.CRS) == 0 || strings.TrimSpace(string(c.CRS)) == "null")
}

// Field is one non-geometry top-level column, as inspect lists it.
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// File is an open GeoParquet file.
type File struct {
	f        *parquet.File
	meta     Metadata
	geomCol  int    // leaf column index of the geometry column read
	column   string // its name
	props    []prop
	rowGroup int
	rows     parquet.Rows
	buf      []parquet.Row
	n, i     int
	row      int64 // rows read so far
	wkb      []byte
	json     []byte
	cols     [][]parquet.Value
	err      error
}

// prop is one top-level property column.
type prop struct {
	name  string
	key   []byte // the name as a JSON string, with the colon
	node  parquet.Node
	leaf  int // leaf column index, or -1 for a group (list, map, struct)
	conv  converter
	field parquet.Field
	// nested assembles a group column (leaf < 0).
	nested *nestedProp
}

// RatioError is a column chunk, or one page of it, that declares more
// than the ratio Open was given times its size uncompressed, or a page
// that declares more values than that ratio times 8 per byte: a
// decompression bomb, refused before it is read.
type RatioError struct {
	Column string
	// Page is the page's index in its column chunk, or -1 for the chunk.
	Page                     int
	Compressed, Uncompressed int64
	// Values is the page's value count when that is what is over.
	Values int64
	Max    int64
}

func (e *RatioError) Error() string {
	if e.Values > 0 {
		return fmt.Sprintf("column %q, page %d: a page of %d bytes declares %d values, more than %d times 8 per byte", e.Column, e.Page, e.Compressed, e.Values, e.Max)
	}
	if e.Page >= 0 {
		return fmt.Sprintf("column %q, page %d: a page of %d bytes declares %d uncompressed, more than %d times its size", e.Column, e.Page, e.Compressed, e.Uncompressed, e.Max)
	}
	return fmt.Sprintf("column %q: a chunk of %d bytes declares %d uncompressed, more than %d times its size", e.Column, e.Compressed, e.Uncompressed, e.Max)
}

// Open reads the footer and the `geo` metadata of the Parquet file r of
// the given size. It checks what the rows will need: a WKB primary
// geometry column that exists as a byte-array column; that every column
// chunk lies inside the file and declares at most maxRatio times its
// compressed size uncompressed; and, since parquet-go sizes its page
// buffers by what each page header declares, every page header of every
// chunk (checkPages): each page inside its chunk, and at most maxRatio
// times its compressed size uncompressed (a *RatioError otherwise;
// maxRatio <= 0 checks no ratio). Only the footer and the page headers
// are read. The geometry read is the primary column's, or the geometry
// column named column (case-insensitively; a *ColumnError when the geo
// metadata has none of that name).
func Open(r io.ReaderAt, size int64, maxRatio int64, column string) (_ *File, err error) {
	defer recoverAs(&err, "read the footer")
	pf, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("not a readable Parquet file: %w", err)
	}
	for i, rg := range pf.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			md := cc.MetaData
			name := strings.Join(md.PathInSchema, ".")
			start := md.DataPageOffset
			if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
				start = md.DictionaryPageOffset
			}
			if start < 0 || md.TotalCompressedSize < 0 || md.TotalUncompressedSize < 0 || start > size || md.TotalCompressedSize > size-start {
				return nil, fmt.Errorf("row group %d, column %q: its chunk (%d bytes at %d) is not inside the file of %d bytes", i, name, md.TotalCompressedSize, start, size)
			}
			if maxRatio > 0 && md.TotalUncompressedSize > maxRatio*max(md.TotalCompressedSize, 1<<10) {
				return nil, &RatioError{Column: name, Page: -1, Compressed: md.TotalCompressedSize, Uncompressed: md.TotalUncompressedSize, Max: maxRatio}
			}
			// Where parquet-go starts reading the chunk's pages.
			base := md.DataPageOffset
			if md.DictionaryPageOffset != 0 {
				base = md.DictionaryPageOffset
			}
			if base < 0 || base > size || md.TotalCompressedSize > size-base {
				return nil, fmt.Errorf("row group %d, column %q: its pages (%d bytes at %d) are not inside the file of %d bytes", i, name, md.TotalCompressedSize, base, size)
			}
			if err := checkPages(r, base, md.TotalCompressedSize, maxRatio, name, md.NumValues); err != nil {
				return nil, fmt.Errorf("row group %d, %w", i, err)
			}
		}
	}
	raw, ok := pf.Lookup("geo")
	if !ok {
		raw, ok, err = nativeGeo(pf)
		if err != nil {
			return nil, err
		}
	}
	if !ok {
		return nil, errors.New("a Parquet file without GeoParquet's \"geo\" metadata or a column of Parquet's GEOMETRY type: geoingest reads GeoParquet (write it with GDAL, GeoPandas' to_parquet or DuckDB's spatial extension)")
	}
	g := &File{f: pf, geomCol: -1}
	if err := json.Unmarshal([]byte(raw), &g.meta); err != nil {
		return nil, fmt.Errorf("the \"geo\" metadata is not valid JSON: %w", err)
	}
	m := &g.meta
	if m.PrimaryColumn == "" {
		return nil, errors.New("the \"geo\" metadata names no primary_column")
	}
	name := m.PrimaryColumn
	if column != "" {
		var names []string
		name = ""
		for c := range m.Columns {
			names = append(names, strconv.Quote(c))
			if strings.EqualFold(c, column) {
				name = c
			}
		}
		if name == "" {
			slices.Sort(names)
			return nil, &ColumnError{fmt.Sprintf("no geometry column %q (the file's geometry columns are %s)", column, strings.Join(names, ", "))}
		}
	}
	g.column = name
	col, ok := m.Columns[name]
	if !ok {
		return nil, fmt.Errorf("the \"geo\" metadata does not describe its primary column %q", name)
	}
	if !strings.EqualFold(col.Encoding, "WKB") {
		return nil, fmt.Errorf("geometry column %q has encoding %q; geoingest reads the WKB encoding (rewrite with geometry_encoding=WKB, GDAL's default)", name, col.Encoding)
	}
	// Whether the column is a top-level one is read from the schema's
	// fields: parquet-go's Lookup counts a schema root marked REPEATED
	// (as Arrow's Go writer marks it) in every column's levels; its column
	// index is right.
	top := slices.IndexFunc(pf.Schema().Fields(), func(f parquet.Field) bool { return f.Name() == name })
	leaf, ok := pf.Schema().Lookup(name)
	if !ok || top < 0 || !pf.Schema().Fields()[top].Leaf() || pf.Schema().Fields()[top].Repeated() {
		return nil, fmt.Errorf("geometry column %q is not a top-level column of the file", name)
	}
	if k := leaf.Node.Type().Kind(); k != parquet.ByteArray {
		return nil, fmt.Errorf("geometry column %q is of type %s, not a byte array of WKB", name, k)
	}
	g.geomCol = leaf.ColumnIndex
	skip := map[string]bool{}
	for name, c := range m.Columns {
		skip[name] = true
		if c.Covering != nil {
			for _, path := range c.Covering.BBox {
				if len(path) > 0 {
					skip[path[0]] = true
				}
			}
		}
	}
	first := 0 // the field's first leaf column
	for _, fld := range pf.Schema().Fields() {
		firstLeaf := first
		first += leafCount(fld)
		if skip[fld.Name()] {
			continue
		}
		key, _ := json.Marshal(fld.Name())
		p := prop{name: fld.Name(), key: append(key, ':'), node: fld, leaf: -1, field: fld}
		if fld.Leaf() && !fld.Repeated() {
			lc, ok := pf.Schema().Lookup(fld.Name())
			if ok {
				p.leaf = lc.ColumnIndex
				p.conv = converterOf(fld.Type())
			}
		}
		if p.leaf < 0 {
			p.nested = newNestedProp(fld, firstLeaf)
		}
		g.props = append(g.props, p)
	}
	return g, nil
}

// Metadata returns the `geo` metadata.
func (g *File) Metadata() Metadata { return g.meta }

// Primary returns the description of the geometry column read: the
// primary one, or the one Open was asked for.
func (g *File) Primary() Column { return g.meta.Columns[g.column] }

// Column is the name of the geometry column read.
func (g *File) Column() string { return g.column }

// ColumnError is Open's error for a geometry column asked for that the
// file lacks.
type ColumnError struct{ msg string }

func (e *ColumnError) Error() string { return e.msg }

// NumRows is the number of rows the footer declares.
func (g *File) NumRows() int64 { return g.f.NumRows() }

// RowGroups is the number of row groups.
func (g *File) RowGroups() int { return len(g.f.RowGroups()) }

// Fields lists the property columns with their Parquet types.
func (g *File) Fields() []Field {
	out := make([]Field, 0, len(g.props))
	for _, p := range g.props {
		out = append(out, Field{Name: p.name, Type: typeName(p.node)})
	}
	return out
}

// Next reads the next row. It returns false at the end or on an error,
// which Err reports.
func (g *File) Next() (ok bool) {
	if g.err != nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			g.err = fmt.Errorf("row %d: corrupt data (%v)", g.row, p)
			ok = false
		}
	}()
	for g.i >= g.n {
		if !g.fill() {
			return false
		}
	}
	row := g.buf[g.i]
	g.i++
	if err := g.decode(row); err != nil {
		g.err = fmt.Errorf("row %d: %w", g.row, err)
		return false
	}
	g.row++
	return true
}

// fill reads the next batch, moving to the next row group as needed.
func (g *File) fill() bool {
	for {
		if g.rows == nil {
			rgs := g.f.RowGroups()
			if g.rowGroup >= len(rgs) {
				if g.row != g.f.NumRows() {
					g.err = fmt.Errorf("the footer declares %d rows but the row groups hold %d", g.f.NumRows(), g.row)
				}
				return false
			}
			g.rows = rgs[g.rowGroup].Rows()
			g.rowGroup++
		}
		if g.buf == nil {
			g.buf = make([]parquet.Row, batchRows)
		}
		n, err := g.rows.ReadRows(g.buf)
		g.n, g.i = n, 0
		if n > 0 {
			// Rows read before an error are good; the error comes again
			// with the next batch.
			return true
		}
		if err != nil && err != io.EOF {
			g.err = fmt.Errorf("row group %d: %w", g.rowGroup-1, err)
			return false
		}
		g.rows.Close()
		g.rows = nil
	}
}

// decode sets WKB and Properties from row.
func (g *File) decode(row parquet.Row) error {
	g.wkb = nil
	cols := g.cols[:0]
	row.Range(func(i int, vs []parquet.Value) bool {
		for len(cols) <= i {
			cols = append(cols, nil)
		}
		cols[i] = vs
		return true
	})
	g.cols = cols
	if g.geomCol < len(cols) && len(cols[g.geomCol]) == 1 && !cols[g.geomCol][0].IsNull() {
		g.wkb = cols[g.geomCol][0].ByteArray()
	} else if g.geomCol >= len(cols) {
		return errors.New("row has no geometry column")
	}
	b := append(g.json[:0], '{')
	for k, p := range g.props {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, p.key...)
		if p.leaf >= 0 {
			if p.leaf >= len(cols) || len(cols[p.leaf]) == 0 || cols[p.leaf][0].IsNull() {
				b = append(b, "null"...)
				continue
			}
			b = p.conv(b, cols[p.leaf][0])
			continue
		}
		b = p.nested.appendJSON(b, cols)
	}
	g.json = append(b, '}')
	return nil
}

// WKB is the current row's geometry (nil when null). It is valid until
// the next call to Next.
func (g *File) WKB() []byte { return g.wkb }

// Properties is the current row's other columns as a JSON object. It is
// valid until the next call to Next.
func (g *File) Properties() []byte { return g.json }

// Row is the 0-based index of the row Next last read.
func (g *File) Row() int64 { return g.row - 1 }

// Err is the error that stopped Next, if any.
func (g *File) Err() error { return g.err }

// Close releases the row group reader.
func (g *File) Close() error {
	if g.rows != nil {
		err := g.rows.Close()
		g.rows = nil
		return err
	}
	return nil
}

func recoverAs(err *error, what string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: corrupt file (%v)", what, p)
	}
}
