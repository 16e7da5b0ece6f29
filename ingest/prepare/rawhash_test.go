package prepare

import (
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestRawSaltHoldsWhatDecidesTheRow: the raw-hash salt changes with
// everything beside a feature's own bytes that decides its stored row
// (the layer's CRS above all: the same coordinates in another CRS are
// another row), and with nothing that does not (the generation a version
// replaces). A salt that left one out would let equal bytes pass as an
// unchanged row when the row would change.
func TestRawSaltHoldsWhatDecidesTheRow(t *testing.T) {
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"APN"}
	l := geomio.Layer{Name: "x", Format: "geojson", SRID: 4326, CRS: crs.CRS{Method: crs.Authority, EPSG: 4326}}
	base := RawSalt(p, l)
	require.Equal(t, base, RawSalt(p, l), "the same inputs, the same salt")

	same := p
	same.Replaces = "job-1"
	require.Equal(t, base, RawSalt(same, l), "the generation replaced does not decide a row")

	layers := map[string]func(l *geomio.Layer){
		"the SRID":           func(l *geomio.Layer) { l.SRID = 3857 },
		"the CRS's EPSG":     func(l *geomio.Layer) { l.CRS.EPSG = 4258 },
		"the CRS's method":   func(l *geomio.Layer) { l.CRS.Method = crs.Identified },
		"the CRS definition": func(l *geomio.Layer) { l.CRS.Definition = "PROJCS[...]" },
		"the CRS as given":   func(l *geomio.Layer) { l.CRSText = "urn:ogc:def:crs:OGC:1.3:CRS84" },
		"the encoding":       func(l *geomio.Layer) { l.Encoding = "ISO-8859-1" },
		"the layer name":     func(l *geomio.Layer) { l.Name = "y" },
		"the format":         func(l *geomio.Layer) { l.Format = "shapefile" },
		"the geometry field": func(l *geomio.Layer) { l.GeometryField = "geom2" },
	}
	for what, change := range layers {
		m := l
		change(&m)
		require.NotEqual(t, base, RawSalt(p, m), "%s is in the salt", what)
	}
	params := map[string]func(p *ingest.Params){
		"the key":              func(p *ingest.Params) { p.Key = []string{"APN", "STATE"} },
		"the target":           func(p *ingest.Params) { p.Target = "admin_units" },
		"the invalid policy":   func(p *ingest.Params) { p.Invalid = ingest.PolicyFail },
		"the null policy":      func(p *ingest.Params) { p.NullGeometry = ingest.PolicyFail },
		"the source SRID":      func(p *ingest.Params) { p.SourceSRID = 2154 },
		"the default encoding": func(p *ingest.Params) { p.DefaultEncoding = "windows-1252" },
		"the mapping":          func(p *ingest.Params) { p.Mapping = "m" },
		"the pipeline version": func(p *ingest.Params) { p.PipelineVersion = "v2" },
	}
	for what, change := range params {
		q := p
		q.Key = append([]string(nil), p.Key...)
		change(&q)
		require.NotEqual(t, base, RawSalt(q, l), "%s is in the salt", what)
	}
	require.NotEqual(t, rawHash(1, base), rawHash(2, base))
	require.NotEqual(t, rawHash(1, base), rawHash(1, base+1))
}
