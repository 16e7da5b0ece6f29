package prepare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// The policies are applied to real files read by geomio, with no
// database: the SRID check is a function of the test's.

const (
	square  = `{"type":"Polygon","coordinates":[[[2,48],[2.001,48],[2.001,48.001],[2,48.001],[2,48]]]}`
	squares = `{"type":"MultiPolygon","coordinates":[[[[3,48],[3.001,48],[3.001,48.001],[3,48.001],[3,48]]],[[[4,48],[4.001,48],[4.001,48.001],[4,48.001],[4,48]]]]}`
	point   = `{"type":"Point","coordinates":[2,48]}`
)

// geojsonFile writes a FeatureCollection of geometries (with crs, when not
// "") and returns a reader of it.
func geojsonFile(t *testing.T, crs string, geometries ...string) geomio.Reader {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection",`)
	if crs != "" {
		b.WriteString(`"crs":{"type":"name","properties":{"name":"` + crs + `"}},`)
	}
	b.WriteString(`"features":[`)
	for i, g := range geometries {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"Feature","properties":{"i":` + strconv.Itoa(i) + `},"geometry":` + g + `}`)
	}
	b.WriteString(`]}`)
	path := filepath.Join(t.TempDir(), "f.geojson")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	r, err := geomio.Open(path, geomio.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

func knownAll(context.Context, int) (bool, error) { return true, nil }

// collect runs f in mode and returns the indexes of the features it
// yielded, in order.
func collect(t *testing.T, f *Features, mode Mode) ([]int64, error) {
	t.Helper()
	var got []int64
	err := f.Run(mode, func(out []byte, ft *Feature, p *Prepared) []byte {
		require.NotEmpty(t, p.EWKB)
		return append(out, byte(ft.Index))
	}, func(out []byte) error {
		for _, b := range out {
			got = append(got, int64(b))
		}
		return nil
	})
	return got, err
}

func TestPoliciesSkip(t *testing.T) {
	r := geojsonFile(t, "", square, `null`, point, squares)
	f := New(context.Background(), r, ingest.DefaultParams("parcels"), knownAll)
	got, err := collect(t, f, Direct)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 3}, got, "the polygon (promoted) and the multipolygon, in order")
	require.EqualValues(t, 1, f.SkippedNull)
	require.EqualValues(t, 1, f.SkippedType)
	require.False(t, f.Switched())
	require.Empty(t, f.Invalid)
	require.False(t, f.ServerCheck, "parcels in range are measured here")
}

func TestPoliciesFail(t *testing.T) {
	p := ingest.DefaultParams("parcels")
	p.NullGeometry = ingest.PolicyFail
	_, err := collect(t, New(context.Background(), geojsonFile(t, "", square, `null`), p, knownAll), Direct)
	require.Equal(t, ingest.Permanent, ingest.KindOf(err))
	require.ErrorContains(t, err, "feature 1: null or empty geometry (null-geometry policy is fail)")

	p = ingest.DefaultParams("parcels")
	p.WrongType = ingest.PolicyFail
	_, err = collect(t, New(context.Background(), geojsonFile(t, "", square, point), p, knownAll), Direct)
	require.Equal(t, ingest.Permanent, ingest.KindOf(err))
	require.ErrorContains(t, err, "feature 1: *geom.Point is not polygonal (wrong-type policy is fail)")
}

func TestPromotesPolygon(t *testing.T) {
	f := New(context.Background(), geojsonFile(t, "", square), ingest.DefaultParams("parcels"), knownAll)
	var n int
	require.NoError(t, f.Run(Direct, func(out []byte, ft *Feature, p *Prepared) []byte {
		n++
		require.Equal(t, 1, ft.Geom.NumPolygons())
		require.Equal(t, 4326, ft.Geom.SRID())
		require.Equal(t, byte(6), p.EWKB[1], "EWKB MultiPolygon")
		require.True(t, p.Measured)
		require.True(t, p.Valid)
		require.InDelta(t, 8260, p.Area, 100, "about 74 m by 111 m")
		return out
	}, func([]byte) error { return nil }))
	require.Equal(t, 1, n)
}

// TestLonLatRefused: a layer that says EPSG:4326 with projected
// coordinates is refused, naming the feature and the bounds.
func TestLonLatRefused(t *testing.T) {
	projected := `{"type":"Polygon","coordinates":[[[650000,6860000],[650100,6860000],[650100,6860100],[650000,6860000]]]}`
	r := geojsonFile(t, "urn:ogc:def:crs:EPSG::4326", square, projected)
	_, err := collect(t, New(context.Background(), r, ingest.DefaultParams("parcels"), knownAll), Direct)
	require.Equal(t, ingest.Permanent, ingest.KindOf(err))
	require.ErrorContains(t, err, "feature 1: coordinates (650000 6.86e+06)..(650100 6.8601e+06) outside longitude/latitude range, but the CRS is EPSG:4326")
}

func TestSRIDChecks(t *testing.T) {
	ctx := context.Background()
	_, err := collect(t, New(ctx, geojsonFile(t, "", square), ingest.DefaultParams("parcels"),
		func(context.Context, int) (bool, error) { return false, nil }), Direct)
	require.Equal(t, ingest.Permanent, ingest.KindOf(err))
	require.ErrorContains(t, err, "EPSG:4326 is not a CRS that PostGIS knows")

	_, err = collect(t, New(ctx, geojsonFile(t, "", square), ingest.DefaultParams("parcels"),
		func(context.Context, int) (bool, error) { return false, errors.New("connection lost") }), Direct)
	require.Equal(t, ingest.Transient, ingest.KindOf(err))
}

// TestSwitchToStaged: a Direct run stops at the first feature in another
// CRS, and a Staged run goes on from it.
func TestSwitchToStaged(t *testing.T) {
	mercator := `{"type":"Polygon","coordinates":[[[250000,6100000],[250100,6100000],[250100,6100100],[250000,6100100],[250000,6100000]]]}`
	r := geojsonFile(t, "urn:ogc:def:crs:EPSG::3857", mercator, mercator)
	f := New(context.Background(), r, ingest.DefaultParams("parcels"), knownAll)
	got, err := collect(t, f, Direct)
	require.NoError(t, err)
	require.Empty(t, got)
	require.True(t, f.Switched())
	got, err = collect(t, f, Staged)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1}, got)
}

// TestOrderKept: many batches on several workers come out in input order.
func TestOrderKept(t *testing.T) {
	geoms := make([]string, 200)
	for i := range geoms {
		geoms[i] = square
	}
	f := New(context.Background(), geojsonFile(t, "", geoms...), ingest.DefaultParams("parcels"), knownAll)
	var got []int64
	require.NoError(t, f.Run(Direct, func(out []byte, ft *Feature, _ *Prepared) []byte {
		return append(out, byte(ft.Index>>8), byte(ft.Index))
	}, func(out []byte) error {
		for i := 0; i+1 < len(out); i += 2 {
			got = append(got, int64(out[i])<<8|int64(out[i+1]))
		}
		return nil
	}))
	require.Len(t, got, 200)
	for i, v := range got {
		require.EqualValues(t, i, v)
	}
}
