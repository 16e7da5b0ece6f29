//go:build cgo && !geoingest_nogdal

package ogr

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/stretchr/testify/require"
)

// inspireParcels is testdata/inspire_parcels.gml: INSPIRE cadastral
// parcels (CP 4.0), a WFS 2.0 response with no schema GDAL knows: each
// parcel has its outline (geometry) and a reference point
// (referencePoint), in ETRS89 / UTM 32N.
func inspireParcels(t testing.TB) string {
	b, err := os.ReadFile("testdata/inspire_parcels.gml")
	require.NoError(t, err)
	return string(b)
}

func FuzzGMLSchemaLocations(f *testing.F) {
	f.Add([]byte(`<wfs:FeatureCollection xsi:schemaLocation="http://maptools.org/ two.xsd http://www.opengis.net/wfs http://schemas.opengis.net/wfs/1.1.0/wfs.xsd">`))
	f.Add([]byte(`<a xsi:schemaLocation = 'ns ../x/../y.XSD ns2 C:\z.xsd ns3 /etc/p.xsd'>`))
	f.Add([]byte(`<a xsi:schemaLocation="unterminated`))
	f.Fuzz(func(t *testing.T, head []byte) {
		for _, loc := range gmlSchemaLocations(head) {
			if filepath.Base(loc) != loc || !strings.EqualFold(filepath.Ext(loc), ".xsd") {
				t.Fatalf("location %q is not a local .xsd base name", loc)
			}
		}
	})
}

// TestGMLScanInspireParcels: the scan of a GML file without a schema
// finds the INSPIRE parcels' outline and their reference point, in the
// order the file has them (geomio's TestGMLInspireParcels reads through
// the outline).
func TestGMLScanInspireParcels(t *testing.T) {
	t.Parallel()
	require.Equal(t, []gmlClass{{Name: "CadastralParcel", Geoms: []gmlGeomProp{{Name: "geometry", Type: "MultiPolygon"}, {Name: "referencePoint", Type: "Point"}}}},
		scanGMLGeometryProperties(strings.NewReader(inspireParcels(t))))
}

// TestGMLRegistrySchemaNotDerived: the INSPIRE parcels as CP 3.0, a
// schema GDAL's registry knows (gml_registry.xml), whose class already
// has both geometry fields: geoingest derives no .gfs of its own (a
// derived one would be read instead of the registry's), and GDAL's
// prescan runs in a directory that is removed.
func TestGMLRegistrySchemaNotDerived(t *testing.T) {
	t.Parallel()
	cp3 := strings.NewReplacer("http://inspire.ec.europa.eu/schemas/cp/4.0", "urn:x-inspire:specification:gmlas:CadastralParcels:3.0",
		"http://www.opengis.net/gml/3.2", "http://www.opengis.net/gml").Replace(inspireParcels(t))
	p3 := filepath.Join(t.TempDir(), "parcels.gml")
	require.NoError(t, os.WriteFile(p3, []byte(cp3), 0o644))
	tmp := t.TempDir()
	gfs, dir, err := gmlDerivedSchema(p3, core.Options{TempDir: tmp}, GML)
	require.NoError(t, err)
	require.Empty(t, gfs, "the registry's schema is GDAL's, not a derived one")
	require.Empty(t, dir)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "the prescan's directory is removed")
}

func FuzzGMLGeometryProperties(f *testing.F) {
	f.Add([]byte(inspireParcels(f)))
	f.Add([]byte(`<a><gml:featureMember xmlns:gml="http://www.opengis.net/gml"><b><g><gml:Polygon/></g><h><gml:Point/></h></b></gml:featureMember></a>`))
	f.Add([]byte(`<a><member><b><g><x:Polygon xmlns:x="http://www.opengis.net/gml/3.2"/></g></b><b/></member>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, c := range scanGMLGeometryProperties(bytes.NewReader(doc)) {
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

// TestRunCapReader: long runs of text lose their middle, short ones and
// the markup pass unchanged, and the scan still finds the geometry
// properties of a feature whose attribute is far over the cut.
func TestRunCapReader(t *testing.T) {
	in := "<a x=\"" + strings.Repeat("y", 3*gmlScanRun) + "\">short</a><b>" + strings.Repeat("z", gmlScanRun/2) + "</b>"
	out, err := io.ReadAll(newRunCapReader(strings.NewReader(in)))
	require.NoError(t, err)
	got := string(out)
	tail := "\">short</a><b>" + strings.Repeat("z", gmlScanRun/2) + "</b>"
	require.True(t, strings.HasPrefix(got, "<a x=\"yyy"), "the run's head kept")
	require.True(t, strings.HasSuffix(got, tail), "the run's tail, the markup and a short run kept")
	require.Equal(t, 1+gmlScanRun+len(tail)-1, len(got), "the long run cut to %d bytes", gmlScanRun)
}
