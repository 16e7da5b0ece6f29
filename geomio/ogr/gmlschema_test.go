//go:build cgo && !geoingest_nogdal

package ogr_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

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

// inspireParcels is an INSPIRE cadastral parcels (CP 4.0) WFS 2.0
// response with no schema GDAL knows: each parcel has its outline
// (geometry) and a reference point (referencePoint), in ETRS89 / UTM 32N
// (geomio/ogr's test data, whose scan of it is tested there).
var inspireParcels = func() string {
	b, err := os.ReadFile("testdata/inspire_parcels.gml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// TestGMLInspireParcels: INSPIRE cadastral parcels without a schema read
// through their outline (the first polygonal field), not the reference
// point that comes last; in a projected CRS, easting first.
func TestGMLInspireParcels(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
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
	// given (a derived one would be read instead of the registry's:
	// geomio/ogr's TestGMLRegistrySchemaNotDerived).
	cp3 := strings.NewReplacer("http://inspire.ec.europa.eu/schemas/cp/4.0", "urn:x-inspire:specification:gmlas:CadastralParcels:3.0",
		"http://www.opengis.net/gml/3.2", "http://www.opengis.net/gml").Replace(inspireParcels)
	p3 := filepath.Join(t.TempDir(), "parcels.gml")
	require.NoError(t, os.WriteFile(p3, []byte(cp3), 0o644))
	fs, ls, err = readOGR(t, p3, Options{SourceSRID: 25832})
	require.NoError(t, err)
	require.Len(t, fs, 2)
	require.Equal(t, "geometry", ls[0].GeometryField)
	require.InDelta(t, 30000, math.Abs(planarArea(fs)), 1e-6)
	require.Contains(t, string(fs[0].Properties), `"inspireId_localId":null`, "the registry's attributes")
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
