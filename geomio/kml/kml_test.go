package kml

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

const poly = `<Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon>`

var testLimits = Limits{MaxTokenBytes: 1 << 20, MaxVertices: 1000, MaxLayers: 50, MaxFields: 50}

type placemark struct {
	layer string
	geom  geom.T
	z     bool
	vals  []Value
}

// readAll scans doc and reads every layer.
func readAll(doc []byte, lim Limits) (*Doc, []placemark, error) {
	d, err := Scan(bytes.NewReader(doc), int64(len(doc)), "base", lim)
	if err != nil {
		return nil, nil, err
	}
	var out []placemark
	for i := range d.Layers {
		r, err := d.Layer(i)
		if err != nil {
			return d, out, err
		}
		for r.Next() {
			out = append(out, placemark{layer: d.Layers[i].Name, geom: r.Geom, z: r.DroppedZ, vals: append([]Value(nil), r.Values...)})
		}
		if err := r.Err(); err != nil {
			return d, out, err
		}
	}
	return d, out, nil
}

func doc(body string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document>` + body + `</Document></kml>`)
}

func TestLayersAndGeometry(t *testing.T) {
	d, pms, err := readAll(doc(`<name>root</name>
<Folder><name>a</name><Placemark><name>p</name><MultiGeometry><MultiGeometry>`+poly+poly+`</MultiGeometry><Point><coordinates>1,2</coordinates></Point></MultiGeometry></Placemark>
<Folder><Placemark><Point><coordinates>1 , 2 , 3</coordinates></Point></Placemark></Folder></Folder>
<Placemark><name>r</name>`+poly+`</Placemark>`), testLimits)
	require.NoError(t, err)
	var names []string
	for _, l := range d.Layers {
		names = append(names, l.Name)
	}
	require.Equal(t, []string{"root", "a", "Layer1"}, names, "the root's placemarks first, then the folders depth first")
	require.Len(t, pms, 3)
	require.Equal(t, "r", pms[0].vals[fName].Text)
	gc, ok := pms[1].geom.(*geom.GeometryCollection)
	require.True(t, ok, "%T", pms[1].geom)
	require.Equal(t, 2, gc.NumGeoms())
	require.Equal(t, 2, gc.Geom(0).(*geom.MultiPolygon).NumPolygons())
	require.True(t, pms[2].z, "the altitude is dropped and said")
	require.Equal(t, []float64{1, 2}, pms[2].geom.FlatCoords())
}

// TestCoordinates: blanks between tuples and around commas; errors say
// what is wrong.
func TestCoordinates(t *testing.T) {
	for in, want := range map[string][]float64{
		"0,0 1,0\n1,1\t0,0":       {0, 0, 1, 0, 1, 1, 0, 0},
		"  0,0,9   1 ,0 , 9 1,1 ": {0, 0, 1, 0, 1, 1},
		"-1.5e1,2.25":             {-15, 2.25},
	} {
		_, pms, err := readAll(doc(`<Placemark><LineString><coordinates>`+in+`</coordinates></LineString></Placemark>`), testLimits)
		require.NoError(t, err, in)
		require.Equal(t, want, pms[0].geom.FlatCoords(), in)
	}
	for in, msg := range map[string]string{
		"0,0 1":    "a tuple with one number",
		"0,0,0,0":  "more than 3 numbers",
		"0,x":      `invalid number "x"`,
		",1,1":     "a comma with no number before it",
		"0,NaN":    `invalid number "NaN"`,
		"0,0 1,1,": "a comma with no number after it",
	} {
		_, _, err := readAll(doc(`<Placemark><LineString><coordinates>`+in+`</coordinates></LineString></Placemark>`), testLimits)
		require.ErrorContains(t, err, msg, in)
		var e *Error
		require.True(t, errors.As(err, &e), in)
		require.Equal(t, "base", e.Layer)
		require.EqualValues(t, 0, e.Index)
	}
}

// TestBounds: a huge coordinates string, a deep document, a geometry of
// too many positions, too many folders or fields: each is refused by its
// limit, as a *LimitError inside an *Error.
func TestBounds(t *testing.T) {
	lim := testLimits
	lim.MaxTokenBytes = 64 << 10
	huge := strings.Repeat("1,2 ", 100_000) // 400 KB in one text token
	deep := strings.Repeat("<MultiGeometry>", 200) + strings.Repeat("</MultiGeometry>", 200)
	many := strings.Repeat("3,4 ", 1001)
	for name, tc := range map[string]struct {
		doc   []byte
		limit string
	}{
		"token":    {doc(`<Placemark><LineString><coordinates>` + huge + `</coordinates></LineString></Placemark>`), "token-bytes"},
		"comment":  {doc(`<!--` + huge + `-->`), "token-bytes"},
		"depth":    {doc(`<Placemark>` + deep + `</Placemark>`), "depth"},
		"vertices": {doc(`<Placemark><LineString><coordinates>` + many + `</coordinates></LineString></Placemark>`), "vertices"},
		"layers":   {doc(strings.Repeat(`<Folder/>`, 51)), "layers"},
		"fields":   {doc(`<Placemark><ExtendedData>` + strings.Repeat(`<Data name="a"/>`, 1) + fields(51) + `</ExtendedData></Placemark>`), "fields"},
	} {
		_, _, err := readAll(tc.doc, lim)
		var le *LimitError
		require.True(t, errors.As(err, &le), "%s: %v", name, err)
		require.Equal(t, tc.limit, le.Limit, name)
		var e *Error
		require.True(t, errors.As(err, &e), name)
		require.Positive(t, e.Line, name)
	}
}

func fields(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(`<Data name="f` + strings.Repeat("x", i) + `"><value>1</value></Data>`)
	}
	return b.String()
}

// TestCorrupt: what is not well-formed KML fails with the line.
func TestCorrupt(t *testing.T) {
	good := doc(`<Folder><name>f</name><Placemark>` + poly + `</Placemark></Folder>`)
	for name, in := range map[string][]byte{
		"cut":      good[:len(good)-30],
		"mismatch": bytes.Replace(good, []byte("</LinearRing>"), []byte("</Ring>"), 1),
		"not kml":  []byte(`<html><body/></html>`),
		"empty":    nil,
		"binary":   {0, 1, 2, 3},
	} {
		_, _, err := readAll(in, testLimits)
		require.Error(t, err, name)
		var e *Error
		require.True(t, errors.As(err, &e), "%s: %T %v", name, err, err)
	}
	_, _, err := readAll(good[:len(good)-30], testLimits)
	require.ErrorContains(t, err, "unexpected EOF")
}

// TestEncodings: a declared single-byte encoding is decoded, and its
// layers (read again from the start, not from an offset) are the same.
func TestEncodings(t *testing.T) {
	in := []byte("<?xml version=\"1.0\" encoding=\"windows-1252\"?><kml><Document><Folder><name>caf\xe9</name><Placemark><name>\x80</name>" + poly + "</Placemark></Folder>" +
		"<Folder><name>b</name><Placemark><name>second</name>" + poly + "</Placemark></Folder></Document></kml>")
	d, pms, err := readAll(in, testLimits)
	require.NoError(t, err)
	require.Equal(t, "windows-1252", d.Encoding)
	require.Equal(t, "café", d.Layers[0].Name)
	require.Equal(t, "€", pms[0].vals[fName].Text)
	require.Equal(t, "second", pms[1].vals[fName].Text)
	// A BOM before a UTF-8 document.
	d, pms, err = readAll(append([]byte{0xEF, 0xBB, 0xBF}, doc(`<Folder><name>f</name><Placemark><name>x</name>`+poly+`</Placemark></Folder>`)...), testLimits)
	require.NoError(t, err)
	require.Equal(t, "x", pms[0].vals[fName].Text)
	_, _, err = readAll([]byte(`<?xml version="1.0" encoding="no-such"?><kml/>`), testLimits)
	require.ErrorContains(t, err, `unsupported encoding "no-such"`)
}

// FuzzKML: any input is refused with an *Error or read; nothing panics,
// no geometry holds more positions than the limit, and every layer read
// ends.
func FuzzKML(f *testing.F) {
	f.Add(doc(`<Folder><name>f</name><Placemark><name>a</name><ExtendedData><Data name="k"><value>v</value></Data></ExtendedData>` + poly + `</Placemark></Folder>`))
	f.Add(doc(`<Placemark><MultiGeometry><Point><coordinates>1,2,3</coordinates></Point>` + poly + `</MultiGeometry></Placemark><Folder/><Folder><Folder><name>x</name></Folder></Folder>`))
	f.Add([]byte(`<kml><Placemark><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1</coordinates></LinearRing></outerBoundaryIs><innerBoundaryIs><LinearRing><coordinates>0.1,0.1 0.2,0.1 0.1,0.1</coordinates></LinearRing></innerBoundaryIs></Polygon></Placemark></kml>`))
	f.Add([]byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><kml><Document><Schema id=\"s\"><SimpleField name=\"n\" type=\"int\"/></Schema><Placemark><name>\xe9</name><ExtendedData><SchemaData><SimpleData name=\"n\">7</SimpleData></SchemaData></ExtendedData><gx:Track><gx:coord>1 2 3</gx:coord></gx:Track></Placemark></Document></kml>"))
	f.Add([]byte(`<Document><Placemark><![CDATA[x]]><LineString><coordinates><![CDATA[1,2]]> 3,4</coordinates></LineString></Placemark></Document>`))
	lim := Limits{MaxTokenBytes: 4 << 10, MaxVertices: 64, MaxLayers: 8, MaxFields: 8}
	f.Fuzz(func(t *testing.T, in []byte) {
		_, pms, err := readAll(in, lim)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%T %v", err, err)
			}
		}
		for _, p := range pms {
			if n := positions(p.geom); n > lim.MaxVertices {
				t.Fatalf("%d positions", n)
			}
		}
	})
}

func positions(g geom.T) int64 {
	switch t := g.(type) {
	case nil:
		return 0
	case *geom.GeometryCollection:
		var n int64
		for _, h := range t.Geoms() {
			n += positions(h)
		}
		return n
	}
	return int64(len(g.FlatCoords()) / 2)
}

// TestLinks: a KMZ's main document's NetworkLinks are listed; a linked
// document is one layer, its root's placemarks, named as told.
func TestLinks(t *testing.T) {
	in := doc(`<NetworkLink><name>n</name><Link><href> layers/a.kml </href></Link></NetworkLink><NetworkLink><Url><href>http://x/y.kml</href></Url></NetworkLink>`)
	d, err := Scan(bytes.NewReader(in), int64(len(in)), "base", testLimits)
	require.NoError(t, err)
	require.Equal(t, []string{"layers/a.kml", "http://x/y.kml"}, d.Links)
	require.Len(t, d.Layers, 1, "as GDAL lists a .kml whose root holds links: one empty layer")
	require.Zero(t, d.Layers[0].Placemarks)

	in = doc(`<Placemark><name>r</name>` + poly + `</Placemark><Folder><name>f</name><Placemark>` + poly + `</Placemark></Folder>`)
	d, err = ScanLinked(bytes.NewReader(in), int64(len(in)), "a", testLimits)
	require.NoError(t, err)
	require.Len(t, d.Layers, 1)
	require.Equal(t, "a", d.Layers[0].Name)
	r, err := d.Layer(0)
	require.NoError(t, err)
	n := 0
	for r.Next() {
		n++
	}
	require.NoError(t, r.Err())
	require.Equal(t, 1, n, "the root's placemark, not the folder's")
}
