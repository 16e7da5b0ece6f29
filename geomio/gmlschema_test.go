//go:build cgo && !geoingest_nogdal

package geomio

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/stretchr/testify/require"
)

// makeTwoFieldGML writes dir/two.gml and dir/two.xsd (ogr2ogr, GML 3): a
// layer "parcel" with two multipolygon fields, "centre" (a 0.001° circle
// around each county's centroid) and "footprint" (the county), EPSG:4326
// as a URN (latitude first).
func makeTwoFieldGML(t *testing.T, dir string) string {
	t.Helper()
	gml := filepath.Join(dir, "two.gml")
	ogr2ogr(t, "-f", "GML", "-dsco", "FORMAT=GML3", "-nlt", "MULTIPOLYGON", gml, srcCounties, "-dialect", "SQLITE", "-nln", "parcel",
		"-sql", "SELECT ST_Buffer(ST_Centroid(geometry), 0.001) AS centre, geometry AS footprint, NAME FROM six_counties")
	return gml
}

// TestGMLSchemaBeside: a GML file's geometry fields are declared by its
// schema, which GDAL reads only when it is beside the file: a .xsd of the
// same name (also beside a .gml.gz, which GDAL alone misses), the .xsd a
// relative xsi:schemaLocation names, a .gfs, or the .xsd in the same zip.
// Each is read through its first polygonal field ("centre") and says so.
// Without a schema GDAL sees one unnamed geometry per feature (the last),
// and a geometry field asked for by name is a clear error, not a silent
// read of whichever geometry came last.
func TestGMLSchemaBeside(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	src := t.TempDir()
	gml := makeTwoFieldGML(t, src)
	body, err := os.ReadFile(gml)
	require.NoError(t, err)
	xsd, err := os.ReadFile(filepath.Join(src, "two.xsd"))
	require.NoError(t, err)
	counties, _, err := readOGR(t, srcCounties, Options{})
	require.NoError(t, err)
	circles := 6 * math.Pi * 1e-6

	write := func(dir, name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, err := w.Write(b)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	gfs := `<GMLFeatureClassList>
  <GMLFeatureClass>
    <Name>parcel</Name>
    <ElementPath>parcel</ElementPath>
    <GeomPropertyDefn><Name>centre</Name><ElementPath>centre</ElementPath><Type>MultiPolygon</Type></GeomPropertyDefn>
    <GeomPropertyDefn><Name>footprint</Name><ElementPath>footprint</ElementPath><Type>MultiPolygon</Type></GeomPropertyDefn>
    <PropertyDefn><Name>NAME</Name><ElementPath>NAME</ElementPath><Type>String</Type></PropertyDefn>
  </GMLFeatureClass>
</GMLFeatureClassList>`
	renamed := bytes.Replace(body, []byte(`http://ogr.maptools.org/ two.xsd`), []byte(`http://ogr.maptools.org/ schemas/parcel.xsd`), 1)
	require.NotEqual(t, body, renamed)

	for _, tc := range []struct {
		name  string
		files map[string][]byte
		open  string
		zip   bool
	}{
		{name: "xsd", files: map[string][]byte{"two.gml": body, "two.xsd": xsd}, open: "two.gml"},
		{name: "gz with xsd", files: map[string][]byte{"two.gml.gz": gz(body), "TWO.XSD": xsd}, open: "two.gml.gz"},
		{name: "schemaLocation", files: map[string][]byte{"two.gml": renamed, "parcel.xsd": xsd}, open: "two.gml"},
		{name: "gfs", files: map[string][]byte{"two.gml": body, "two.gfs": []byte(gfs)}, open: "two.gml"},
		{name: "zip", files: map[string][]byte{"two.gml": body, "two.xsd": xsd}, open: "two.zip", zip: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := dir
			if tc.zip {
				in = filepath.Join(dir, "in")
				require.NoError(t, os.Mkdir(in, 0o755))
			}
			for n, b := range tc.files {
				write(in, n, b)
			}
			open := filepath.Join(dir, tc.open)
			if tc.zip {
				zipDir(t, open, in, ".")
			}
			fs, ls, err := readOGR(t, open, Options{})
			require.NoError(t, err)
			require.Len(t, fs, 6)
			require.Equal(t, "centre", ls[0].GeometryField)
			require.Equal(t, 4326, ls[0].SRID)
			require.InDelta(t, circles, math.Abs(planarArea(fs)), 1e-7, "the small circles")
			require.Less(t, bounds(fs).Min(0), -76.0, "longitude first")

			fs, ls, err = readOGR(t, open, Options{GeometryField: "footprint"})
			require.NoError(t, err)
			require.Equal(t, "footprint", ls[0].GeometryField)
			require.InEpsilon(t, math.Abs(planarArea(counties)), math.Abs(planarArea(fs)), 1e-9)

			_, _, err = readOGR(t, open, Options{GeometryField: "nope"})
			requireInputError(t, err, tc.open, `layer "parcel"`, `no geometry field "nope"`, `"centre", "footprint"`)
			ents, err := os.ReadDir(in)
			require.NoError(t, err)
			require.Len(t, ents, len(tc.files), "nothing written beside the upload")
		})
	}

	// No schema: the geometry properties found in the file (a .gfs derived
	// from GDAL's own prescan, in a private directory removed at once).
	for _, name := range []string{"two.gml", "two.gml.gz"} {
		dir, tmp := t.TempDir(), t.TempDir()
		b := body
		if strings.HasSuffix(name, ".gz") {
			b = gz(body)
		}
		lone := write(dir, name, b)
		fs, ls, err := readOGR(t, lone, Options{TempDir: tmp})
		require.NoError(t, err, name)
		require.Len(t, fs, 6)
		require.Equal(t, "centre", ls[0].GeometryField, name)
		require.Equal(t, 4326, ls[0].SRID)
		require.InDelta(t, circles, math.Abs(planarArea(fs)), 1e-7, "the small circles")
		require.Less(t, bounds(fs).Min(0), -76.0, "longitude first")
		require.Contains(t, string(fs[0].Properties), `"NAME":"District of Columbia"`, "attributes as GDAL's prescan finds them")
		fs, ls, err = readOGR(t, lone, Options{TempDir: tmp, GeometryField: "footprint"})
		require.NoError(t, err)
		require.Equal(t, "footprint", ls[0].GeometryField)
		require.InEpsilon(t, math.Abs(planarArea(counties)), math.Abs(planarArea(fs)), 1e-9)
		_, _, err = readOGR(t, lone, Options{TempDir: tmp, GeometryField: "nope"})
		requireInputError(t, err, name, `layer "parcel"`, `no geometry field "nope"`, `"centre", "footprint"`)
		for _, d := range []string{dir, tmp} {
			ents, err := os.ReadDir(d)
			require.NoError(t, err)
			require.Len(t, ents, map[string]int{dir: 1, tmp: 0}[d], "nothing left beside the upload or in the temporary directory")
		}
	}
}

// TestGMLNeverFetchesSchema: a GML file (a WFS GetFeature response) whose
// schemaLocation is a DescribeFeatureType URL, and whose features link
// elsewhere with xlink:href, is read without a single request to that
// server; so is its .xsd uploaded beside it that includes and imports
// schemas from there.
func TestGMLNeverFetchesSchema(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	var hits atomic.Int64
	xsdDir := t.TempDir()
	gml := makeTwoFieldGML(t, xsdDir)
	xsd, err := os.ReadFile(filepath.Join(xsdDir, "two.xsd"))
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		w.Write(xsd)
	}))
	defer srv.Close()
	body, err := os.ReadFile(gml)
	require.NoError(t, err)
	url := srv.URL + "/wfs?SERVICE=WFS&amp;VERSION=1.1.0&amp;REQUEST=DescribeFeatureType&amp;TYPENAME=ogr:parcel"
	s := strings.Replace(string(body), `http://ogr.maptools.org/ two.xsd`, `http://ogr.maptools.org/ `+url, 1)
	s = strings.Replace(s, `<ogr:NAME>`, `<ogr:owner xmlns:xlink="http://www.w3.org/1999/xlink" xlink:href="`+srv.URL+`/owners.gml#o1"/><ogr:NAME>`, 1)
	s = strings.ReplaceAll(s, "ogr:FeatureCollection", "wfs:FeatureCollection")
	s = strings.Replace(s, `xmlns:ogr=`, `xmlns:wfs="http://www.opengis.net/wfs" xmlns:ogr=`, 1)
	dir := t.TempDir()
	p := filepath.Join(dir, "wfs.gml")
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	fs, ls, err := readOGR(t, p, Options{})
	require.NoError(t, err)
	require.Len(t, fs, 6)
	require.Equal(t, "parcel", ls[0].Name)
	require.Zero(t, hits.Load(), "requests to the schemaLocation's server")

	// The .xsd uploaded beside it includes and imports schemas from the
	// server: its own declarations are read, the remote ones never fetched.
	remote := strings.Replace(string(xsd), `<xs:import namespace="http://www.opengis.net/gml"`,
		`<xs:include schemaLocation="`+srv.URL+`/inc.xsd"/><xs:import namespace="http://example.com/x" schemaLocation="`+srv.URL+`/imp.xsd"/><xs:import namespace="http://www.opengis.net/gml"`, 1)
	require.NotEqual(t, string(xsd), remote)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wfs.xsd"), []byte(remote), 0o644))
	fs, ls, err = readOGR(t, p, Options{})
	require.NoError(t, err)
	require.Len(t, fs, 6)
	require.Equal(t, "centre", ls[0].GeometryField, "the uploaded .xsd was read")
	require.Zero(t, hits.Load(), "requests for the schemas the .xsd includes and imports")
}

func FuzzGMLSchemaLocations(f *testing.F) {
	f.Add([]byte(`<wfs:FeatureCollection xsi:schemaLocation="http://ogr.maptools.org/ two.xsd http://www.opengis.net/wfs http://schemas.opengis.net/wfs/1.1.0/wfs.xsd">`))
	f.Add([]byte(`<a xsi:schemaLocation = 'ns ../x/../y.XSD ns2 C:\z.xsd ns3 /etc/p.xsd'>`))
	f.Add([]byte(`<a xsi:schemaLocation="unterminated`))
	f.Fuzz(func(t *testing.T, head []byte) {
		for _, loc := range ogr.GmlSchemaLocations(head) {
			if filepath.Base(loc) != loc || !strings.EqualFold(filepath.Ext(loc), ".xsd") {
				t.Fatalf("location %q is not a local .xsd base name", loc)
			}
		}
	})
}

// inspireParcels is an INSPIRE cadastral parcels (CP 4.0) WFS 2.0
// response with no schema GDAL knows: each parcel has its outline
// (geometry) and a reference point (referencePoint), in ETRS89 / UTM 32N.
const inspireParcels = `<?xml version="1.0" encoding="UTF-8"?>
<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2"
  xmlns:cp="http://inspire.ec.europa.eu/schemas/cp/4.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://inspire.ec.europa.eu/schemas/cp/4.0 https://inspire.ec.europa.eu/schemas/cp/4.0/CadastralParcels.xsd"
  numberMatched="2" numberReturned="2">
  <wfs:member>
    <cp:CadastralParcel gml:id="p1">
      <cp:areaValue uom="m2">10000</cp:areaValue>
      <cp:geometry><gml:MultiSurface gml:id="g1" srsName="http://www.opengis.net/def/crs/EPSG/0/25832"><gml:surfaceMember><gml:Polygon gml:id="g1p">
        <gml:exterior><gml:LinearRing><gml:posList>500000 5500000 500100 5500000 500100 5500100 500000 5500100 500000 5500000</gml:posList></gml:LinearRing></gml:exterior>
      </gml:Polygon></gml:surfaceMember></gml:MultiSurface></cp:geometry>
      <cp:label>1/1</cp:label>
      <cp:nationalCadastralReference>DE-1</cp:nationalCadastralReference>
      <cp:referencePoint><gml:Point gml:id="r1" srsName="http://www.opengis.net/def/crs/EPSG/0/25832"><gml:pos>500050 5500050</gml:pos></gml:Point></cp:referencePoint>
    </cp:CadastralParcel>
  </wfs:member>
  <wfs:member>
    <cp:CadastralParcel gml:id="p2">
      <cp:areaValue uom="m2">20000</cp:areaValue>
      <cp:geometry><gml:MultiSurface gml:id="g2" srsName="http://www.opengis.net/def/crs/EPSG/0/25832"><gml:surfaceMember><gml:Polygon gml:id="g2p">
        <gml:exterior><gml:LinearRing><gml:posList>500100 5500000 500300 5500000 500300 5500100 500100 5500100 500100 5500000</gml:posList></gml:LinearRing></gml:exterior>
      </gml:Polygon></gml:surfaceMember></gml:MultiSurface></cp:geometry>
      <cp:label>1/2</cp:label>
      <cp:nationalCadastralReference>DE-2</cp:nationalCadastralReference>
      <cp:referencePoint><gml:Point gml:id="r2" srsName="http://www.opengis.net/def/crs/EPSG/0/25832"><gml:pos>500200 5500050</gml:pos></gml:Point></cp:referencePoint>
    </cp:CadastralParcel>
  </wfs:member>
</wfs:FeatureCollection>
`

// TestGMLInspireParcels: INSPIRE cadastral parcels without a schema read
// through their outline (the first polygonal field), not the reference
// point that comes last; in a projected CRS, easting first.
func TestGMLInspireParcels(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	require.Equal(t, []ogr.GmlClass{{Name: "CadastralParcel", Geoms: []ogr.GmlGeomProp{{Name: "geometry", Type: "MultiPolygon"}, {Name: "referencePoint", Type: "Point"}}}},
		ogr.ScanGMLGeometryProperties(strings.NewReader(inspireParcels)))
	p := filepath.Join(t.TempDir(), "parcels.gml")
	require.NoError(t, os.WriteFile(p, []byte(inspireParcels), 0o644))
	fs, ls, err := readOGR(t, p, Options{})
	require.NoError(t, err)
	require.Len(t, fs, 2)
	require.Equal(t, "geometry", ls[0].GeometryField)
	require.Equal(t, 25832, ls[0].SRID)
	require.InDelta(t, 30000, math.Abs(planarArea(fs)), 1e-6)
	require.InDelta(t, 500000, bounds(fs).Min(0), 1e-6, "easting first")
	require.Contains(t, string(fs[1].Properties), `"label":"1/2"`)

	// The same as INSPIRE CP 3.0, a schema GDAL's registry knows
	// (gml_registry.xml): read as GDAL's registry describes it (its
	// attributes, as inspireId_localId), through the outline. GDAL finds no
	// CRS in it (the registry takes the CRS from the collection), so the
	// uploader gives it. The registry's class already has both geometry
	// fields, so geoingest derives no .gfs of its own for it: GDAL's
	// prescan runs in a directory that is removed, and no template is
	// given (a derived one would be read instead of the registry's).
	cp3 := strings.NewReplacer("http://inspire.ec.europa.eu/schemas/cp/4.0", "urn:x-inspire:specification:gmlas:CadastralParcels:3.0",
		"http://www.opengis.net/gml/3.2", "http://www.opengis.net/gml").Replace(inspireParcels)
	p3 := filepath.Join(t.TempDir(), "parcels.gml")
	require.NoError(t, os.WriteFile(p3, []byte(cp3), 0o644))
	tmp := t.TempDir()
	gfs, dir, err := ogr.GmlDerivedSchema(p3, Options{TempDir: tmp}, ogr.GML)
	require.NoError(t, err)
	require.Empty(t, gfs, "the registry's schema is GDAL's, not a derived one")
	require.Empty(t, dir)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "the prescan's directory is removed")
	fs, ls, err = readOGR(t, p3, Options{SourceSRID: 25832})
	require.NoError(t, err)
	require.Len(t, fs, 2)
	require.Equal(t, "geometry", ls[0].GeometryField)
	require.InDelta(t, 30000, math.Abs(planarArea(fs)), 1e-6)
	require.Contains(t, string(fs[0].Properties), `"inspireId_localId":null`, "the registry's attributes")
}

func FuzzGMLGeometryProperties(f *testing.F) {
	f.Add([]byte(inspireParcels))
	f.Add([]byte(`<a><gml:featureMember xmlns:gml="http://www.opengis.net/gml"><b><g><gml:Polygon/></g><h><gml:Point/></h></b></gml:featureMember></a>`))
	f.Add([]byte(`<a><member><b><g><x:Polygon xmlns:x="http://www.opengis.net/gml/3.2"/></g></b><b/></member>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, c := range ogr.ScanGMLGeometryProperties(bytes.NewReader(doc)) {
			seen := map[string]bool{}
			for _, g := range c.Geoms {
				if seen[g.Name] || g.Type == "" {
					t.Fatalf("class %q: geometry properties %+v", c.Name, c.Geoms)
				}
				seen[g.Name] = true
			}
		}
	})
}

// TestGMLTruncated: a truncated GML file fails naming the file and GDAL's
// XML error, whether it comes with its schema (GDAL stops at the feature
// the file breaks in) or without one (GDAL's prescan meets the error when
// the file is opened, and GDAL then gives no feature at all: the job
// failed as "no polygonal features", as if the file were empty).
func TestGMLTruncated(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	full := filepath.Join(dir, "full.gml")
	ogr2ogr(t, "-f", "GML", "-dsco", "FORMAT=GML3.2", full, srcBristol, "-nlt", "PROMOTE_TO_MULTI", "-nln", "msoa")
	b, err := os.ReadFile(full)
	require.NoError(t, err)
	xsd, err := os.ReadFile(filepath.Join(dir, "full.xsd"))
	require.NoError(t, err)
	for _, withSchema := range []bool{true, false} {
		sub := filepath.Join(dir, fmt.Sprint(withSchema))
		require.NoError(t, os.MkdirAll(sub, 0o755))
		p := filepath.Join(sub, "full.gml")
		require.NoError(t, os.WriteFile(p, b[:len(b)*6/10], 0o644))
		if withSchema {
			require.NoError(t, os.WriteFile(filepath.Join(sub, "full.xsd"), xsd, 0o644))
		}
		_, _, err := readOGR(t, p, Options{})
		requireInputError(t, err, p, "XML parsing of GML file failed")
	}
}

// TestRunCapReader: long runs of text lose their middle, short ones and
// the markup pass unchanged, and the scan still finds the geometry
// properties of a feature whose attribute is far over the cut.
func TestRunCapReader(t *testing.T) {
	in := "<a x=\"" + strings.Repeat("y", 3*ogr.GmlScanRun) + "\">short</a><b>" + strings.Repeat("z", ogr.GmlScanRun/2) + "</b>"
	out, err := io.ReadAll(ogr.NewRunCapReader(strings.NewReader(in)))
	require.NoError(t, err)
	got := string(out)
	tail := "\">short</a><b>" + strings.Repeat("z", ogr.GmlScanRun/2) + "</b>"
	require.True(t, strings.HasPrefix(got, "<a x=\"yyy"), "the run's head kept")
	require.True(t, strings.HasSuffix(got, tail), "the run's tail, the markup and a short run kept")
	require.Equal(t, 1+ogr.GmlScanRun+len(tail)-1, len(got), "the long run cut to %d bytes", ogr.GmlScanRun)
}
