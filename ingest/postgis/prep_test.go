package postgis

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/geomio/validity"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// The write path computes each feature's area and validity in Go (see
// ingest/prepare). These tests hold those values against PostGIS's own
// ST_Area(geom::geography) and ST_IsValid, on the corpus and on generated
// and crafted shapes.

// ewkbOf encodes mp as the write path does (EWKB, SRID 4326).
func ewkbOf(t *testing.T, mp *geom.MultiPolygon) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, ewkb.Write(&b, ewkb.NDR, mp.SetSRID(4326)))
	return b.Bytes()
}

// postgisAreaValidity returns ST_Area(g::geography) and ST_IsValid(g) of
// each EWKB geometry; the area only where measure is true.
func postgisAreaValidity(t *testing.T, conn *pgx.Conn, wkbs [][]byte, measure []bool) ([]float64, []bool) {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		SELECT CASE WHEN u.m THEN ST_Area(g::geography) END, ST_IsValid(g)
		FROM unnest($1::bytea[], $2::boolean[]) WITH ORDINALITY u(w, m, i), ST_GeomFromEWKB(u.w) g ORDER BY u.i`, wkbs, measure)
	require.NoError(t, err)
	var areas []float64
	var valid []bool
	for rows.Next() {
		var a *float64
		var v bool
		require.NoError(t, rows.Scan(&a, &v))
		if a == nil {
			a = new(float64)
		}
		areas = append(areas, *a)
		valid = append(valid, v)
	}
	require.NoError(t, rows.Err())
	require.Len(t, areas, len(wkbs))
	return areas, valid
}

// requireSameAsPostGIS checks Go's area (geodesic.Area) and validity
// (prepare.Worker.Validity, and GEOS alone) of each geometry against PostGIS's. The areas must
// agree to within geodesic's tolerance (bit for bit where Go uses
// GeographicLib, as PostGIS does: larger polygons). A
// negative area (holes larger than the shell: an invalid geometry, or a
// valid one the spheroid's geodesics turn inside out) is one PostGIS
// refuses to return ("returned area < 0.0"): it must refuse it here too.
//
// A geometry whose area Go leaves to the server (deferred) is not
// compared; every other one must be one PostGIS measures, or the query
// fails the test.
func requireSameAsPostGIS(t *testing.T, conn *pgx.Conn, name string, mps []*geom.MultiPolygon) (invalid, deferred int) {
	t.Helper()
	ctx := context.Background()
	wkbs := make([][]byte, len(mps))
	measure := make([]bool, len(mps))
	got := make([]float64, len(mps))
	var s geodesic.Scratch
	for i, mp := range mps {
		wkbs[i] = ewkbOf(t, mp)
		a, ok := geodesic.Area(mp, &s)
		if !geodesic.InRange(mp) {
			require.False(t, ok, "%s %d: area of coordinates outside the ranges is the server's", name, i)
		}
		if !ok {
			deferred++
		}
		got[i], measure[i] = a, ok && a >= 0
		if ok && a < 0 {
			var pa float64
			require.ErrorContains(t, conn.QueryRow(ctx, `SELECT ST_Area(ST_GeomFromEWKB($1)::geography)`, wkbs[i]).Scan(&pa),
				"area < 0", "%s %d: Go's area %g", name, i, a)
		}
	}
	areas, valid := postgisAreaValidity(t, conn, wkbs, measure)
	p := prepare.NewWorker(prepare.Direct)
	defer p.Close()
	vc := validity.NewChecker()
	defer vc.Close()
	for i := range mps {
		if measure[i] {
			require.True(t, areaWithin(got[i], areas[i]),
				"%s %d: area %.17g, PostGIS %.17g (relative difference %.3g)", name, i, got[i], areas[i], math.Abs(got[i]-areas[i])/math.Max(areas[i], 1e-300))
		}
		v, known := p.Validity(mps[i], wkbs[i])
		require.True(t, known)
		require.Equal(t, valid[i], v, "%s %d: validity", name, i)
		gv, known := vc.Valid(wkbs[i])
		require.True(t, known)
		require.Equal(t, valid[i], gv, "%s %d: GEOS's validity", name, i)
		if !v {
			invalid++
		}
	}
	return invalid, deferred
}

func prepTestConn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), pgtest.NewDB(t))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestAreaValidityMatchPostGISOnCorpus reads every polygonal layer of the
// corpus, in EPSG:4326 (a layer in another CRS is transformed by PostGIS
// first, as the write path's staged rows are), and compares each
// feature's area and validity with PostGIS's.
func TestAreaValidityMatchPostGISOnCorpus(t *testing.T) {
	t.Parallel()
	require.True(t, geodesic.Available())
	conn := prepTestConn(t)
	ctx := context.Background()
	o := loadCorpusOracle(t)
	var layers, features, invalid int
	for _, ds := range o.Datasets {
		path := filepath.Join(corpusDir, strings.TrimPrefix(ds.Source, "/vsizip/"))
		if i := strings.Index(path, ".zip/"); i >= 0 {
			path = path[:i+4]
		}
		srid := 0
		if ds.SourceSRSEPSG == nil {
			srid = 4326 // the noprj layers are longitude/latitude (the corpus test's assumption)
			if ds.AssumedSRS != nil && *ds.AssumedSRS != "EPSG:4326" {
				continue
			}
		}
		r, err := geomio.Open(path, geomio.Options{SourceSRID: srid})
		if err != nil {
			continue
		}
		var mps []*geom.MultiPolygon
		for r.Next() {
			f := r.Feature()
			var mp *geom.MultiPolygon
			switch g := f.Geom.(type) {
			case *geom.MultiPolygon:
				mp = g
			case *geom.Polygon:
				mp = geom.NewMultiPolygon(geom.XY)
				require.NoError(t, mp.Push(g))
				mp.SetSRID(g.SRID())
			default:
				continue
			}
			if mp.SRID() != 4326 && mp.SRID() != 0 {
				var w []byte
				if err := conn.QueryRow(ctx, `SELECT ST_AsEWKB(ST_Transform(ST_GeomFromEWKB($1), 4326))`, ewkbOfSRID(t, mp)).Scan(&w); err != nil {
					continue // outside the CRS's domain: the write path refuses it
				}
				g, err := ewkb.Unmarshal(w)
				require.NoError(t, err)
				mp = g.(*geom.MultiPolygon)
			}
			if !geodesic.InRange(mp) {
				mps = nil // not longitude/latitude: a noprj layer in metres
				break
			}
			mps = append(mps, mp.Clone()) // a Feature is valid until the next Next
		}
		r.Close()
		if len(mps) == 0 {
			continue
		}
		layers++
		features += len(mps)
		inv, deferred := requireSameAsPostGIS(t, conn, ds.ID, mps)
		require.Zero(t, deferred, ds.ID)
		invalid += inv
	}
	t.Logf("%d layers, %d polygonal features (%d invalid): Go's area and validity equal PostGIS's", layers, features, invalid)
	require.GreaterOrEqual(t, layers, 15)
	require.Greater(t, features, 5000)
	require.Greater(t, invalid, 10)
}

func ewkbOfSRID(t *testing.T, mp *geom.MultiPolygon) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, ewkb.Write(&b, ewkb.NDR, mp))
	return b.Bytes()
}

// starRing is a closed ring of n vertices around (cx, cy): star-shaped
// (simple) unless shuffle swaps some of its vertices; clockwise when cw.
func starRing(r *rand.Rand, cx, cy, rx, ry float64, n int, cw, shuffle bool) []geom.Coord {
	angles := make([]float64, n)
	for i := range angles {
		angles[i] = 2 * math.Pi * (float64(i) + 0.8*r.Float64()) / float64(n)
	}
	ring := make([]geom.Coord, 0, n+1)
	for _, a := range angles {
		k := 0.5 + 0.5*r.Float64()
		ring = append(ring, geom.Coord{cx + k*rx*math.Cos(a), cy + k*ry*math.Sin(a)})
	}
	if shuffle {
		i, j := r.IntN(n), r.IntN(n)
		ring[i], ring[j] = ring[j], ring[i]
	}
	if cw {
		for i, j := 0, len(ring)-1; i < j; i, j = i+1, j-1 {
			ring[i], ring[j] = ring[j], ring[i]
		}
	}
	return append(ring, ring[0])
}

func multiPolygon(t *testing.T, polys ...[][]geom.Coord) *geom.MultiPolygon {
	t.Helper()
	mp := geom.NewMultiPolygon(geom.XY)
	for _, rings := range polys {
		p, err := geom.NewPolygon(geom.XY).SetCoords(rings)
		require.NoError(t, err)
		require.NoError(t, mp.Push(p))
	}
	return mp
}

// TestAreaValidityMatchPostGISOnGeneratedShapes: random parcels of every
// size and latitude, with holes, as multipolygons, across the
// antimeridian, around and at the poles, some self-intersecting.
func TestAreaValidityMatchPostGISOnGeneratedShapes(t *testing.T) {
	t.Parallel()
	conn := prepTestConn(t)
	r := rand.New(rand.NewPCG(13, 7))
	var mps []*geom.MultiPolygon
	for i := 0; i < 3000; i++ {
		size := math.Pow(10, -6+7*r.Float64()) // 1e-6 to 10 degrees
		cy := (90 - size) * (2*r.Float64() - 1)
		cx := (180 - size) * (2*r.Float64() - 1)
		if i%10 == 0 { // near a pole
			cy = math.Copysign(90-size-1e-9, cy)
		}
		n := 4 + r.IntN(40)
		shell := starRing(r, cx, cy, size, size, n, r.IntN(2) == 0, i%7 == 0)
		rings := [][]geom.Coord{shell}
		if i%3 == 0 {
			rings = append(rings, starRing(r, cx, cy, size/4, size/4, 3+r.IntN(10), r.IntN(2) == 0, false))
		}
		polys := [][][]geom.Coord{rings}
		if i%5 == 0 && cx+3*size < 180 {
			polys = append(polys, [][]geom.Coord{starRing(r, cx+2.5*size, cy, size/2, size/2, 5, false, false)})
		}
		if i%11 == 0 { // a part overlapping the first: an invalid multipolygon
			polys = append(polys, [][]geom.Coord{starRing(r, cx, cy, size/2, size/2, 6, false, false)})
		}
		mps = append(mps, multiPolygon(t, polys...))
	}
	// Across the antimeridian, at its two longitudes, around a pole, at the
	// poles and the whole range.
	mps = append(mps,
		multiPolygon(t, [][]geom.Coord{{{179.99, 10}, {-179.99, 10}, {-179.99, 10.01}, {179.99, 10.01}, {179.99, 10}}}),
		multiPolygon(t, [][]geom.Coord{{{179.5, -40}, {180, -40}, {180, -39.5}, {179.5, -39.5}, {179.5, -40}}},
			[][]geom.Coord{{{-180, -40}, {-179.5, -40}, {-179.5, -39.5}, {-180, -39.5}, {-180, -40}}}),
		multiPolygon(t, [][]geom.Coord{{{-180, 80}, {-90, 80}, {0, 80}, {90, 80}, {-180, 80}}}),
		multiPolygon(t, [][]geom.Coord{{{-180, 85}, {180, 85}, {180, 90}, {-180, 90}, {-180, 85}}}),
		multiPolygon(t, [][]geom.Coord{{{10, 89.9}, {100, 89.9}, {-170, 89.9}, {-80, 89.9}, {10, 89.9}}}),
		multiPolygon(t, [][]geom.Coord{{{0, -90}, {1, -89}, {-1, -89}, {0, -90}}}),
		multiPolygon(t, [][]geom.Coord{{{-180, -90}, {180, -90}, {180, 90}, {-180, 90}, {-180, -90}}}),
		multiPolygon(t, [][]geom.Coord{{{-170, -60}, {170, -60}, {170, 60}, {-170, 60}, {-170, -60}}}),
	)
	invalid, deferred := requireSameAsPostGIS(t, conn, "generated", mps)
	t.Logf("%d shapes (%d invalid, %d left to the server): Go's area and validity equal PostGIS's", len(mps), invalid, deferred)
	require.Equal(t, 1, deferred, "the whole-range polygon's edges from pole to pole")
	var a float64
	require.ErrorContains(t, conn.QueryRow(context.Background(), `SELECT ST_Area(ST_GeomFromEWKB($1)::geography)`, ewkbOf(t, mps[len(mps)-2])).Scan(&a), "Antipodal")
	require.Greater(t, invalid, 100)
	require.Less(t, invalid, len(mps)/2)
}

// TestValidityCraftedShapes: the classic invalid shapes, and rings GEOS
// refuses to build (which PostGIS refuses to parse: the COPY fails on
// them, as it did before the check moved to Go).
func TestValidityCraftedShapes(t *testing.T) {
	t.Parallel()
	conn := prepTestConn(t)
	sq := [][]geom.Coord{{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}}
	cases := map[string]*geom.MultiPolygon{
		"square":                    multiPolygon(t, sq),
		"bowtie":                    multiPolygon(t, [][]geom.Coord{{{0, 0}, {1, 1}, {1, 0}, {0, 1}, {0, 0}}}),
		"self-touching ring":        multiPolygon(t, [][]geom.Coord{{{0, 0}, {2, 0}, {2, 2}, {1, 0}, {0, 2}, {0, 0}}}),
		"hole touching shell once":  multiPolygon(t, [][]geom.Coord{{{0, 0}, {4, 0}, {4, 4}, {0, 4}, {0, 0}}, {{0, 2}, {2, 1}, {2, 3}, {0, 2}}}),
		"self-touching hole":        multiPolygon(t, [][]geom.Coord{{{0, 0}, {4, 0}, {4, 4}, {0, 4}, {0, 0}}, {{1, 1}, {3, 1}, {2, 2}, {3, 3}, {1, 3}, {2, 2}, {1, 1}}}),
		"hole outside shell":        multiPolygon(t, [][]geom.Coord{{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}, {{2, 2}, {3, 2}, {3, 3}, {2, 2}}}),
		"overlapping parts":         multiPolygon(t, sq, [][]geom.Coord{{{0.5, 0.5}, {1.5, 0.5}, {1.5, 1.5}, {0.5, 0.5}}}),
		"parts touching at a point": multiPolygon(t, sq, [][]geom.Coord{{{1, 1}, {2, 1}, {2, 2}, {1, 1}}}),
		"spike":                     multiPolygon(t, [][]geom.Coord{{{0, 0}, {1, 0}, {1, 1}, {1, 2}, {1, 1}, {0, 1}, {0, 0}}}),
		"repeated points":           multiPolygon(t, [][]geom.Coord{{{0, 0}, {1, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}}),
		"zero area":                 multiPolygon(t, [][]geom.Coord{{{0, 0}, {1, 0}, {2, 0}, {0, 0}}}),
	}
	var names []string
	var mps []*geom.MultiPolygon
	for name, mp := range cases {
		names = append(names, name)
		mps = append(mps, mp)
	}
	wkbs := make([][]byte, len(mps))
	for i, mp := range mps {
		wkbs[i] = ewkbOf(t, mp)
	}
	_, valid := postgisAreaValidity(t, conn, wkbs, make([]bool, len(wkbs)))
	vc := validity.NewChecker()
	defer vc.Close()
	p := prepare.NewWorker(prepare.Direct)
	defer p.Close()
	for i, name := range names {
		v, known := vc.Valid(wkbs[i])
		require.True(t, known)
		require.Equal(t, valid[i], v, name)
		pv, known := p.Validity(mps[i], wkbs[i])
		require.True(t, known)
		require.Equal(t, valid[i], pv, "%s: the write path's verdict", name)
		wantValid := name == "square" || name == "hole touching shell once" || name == "parts touching at a point" || name == "repeated points"
		require.Equal(t, wantValid, v, name)
	}

	unbuildable := map[string]*geom.MultiPolygon{
		"unclosed ring": multiPolygon(t, [][]geom.Coord{{{0, 0}, {1, 0}, {1, 1}, {0, 1}}}),
		"3-point ring":  multiPolygon(t, [][]geom.Coord{{{0, 0}, {1, 0}, {0, 0}}}),
		"2-point ring":  multiPolygon(t, [][]geom.Coord{{{0, 0}, {1, 0}}}),
	}
	for name, mp := range unbuildable {
		w := ewkbOf(t, mp)
		v, known := vc.Valid(w)
		require.True(t, known, name)
		require.False(t, v, name)
		v, known = p.Validity(mp, w)
		require.True(t, known, name)
		require.False(t, v, name)
		var pv bool
		require.Error(t, conn.QueryRow(context.Background(), `SELECT ST_IsValid(ST_GeomFromEWKB($1))`, w).Scan(&pv), name)
	}
}

// TestClientFlagsRepairAndFail writes a layer with invalid features, a
// feature outside the longitude/latitude ranges (whose area the server
// computes) and valid ones, through a partition of its own and through
// the shared one, under each invalid policy, and checks what the ledger
// and the rows say against PostGIS's own ST_Area and ST_IsValid.
func TestClientFlagsRepairAndFail(t *testing.T) {
	t.Parallel()
	features := []string{
		`{"type":"Polygon","coordinates":[[[2,48],[2.001,48],[2.001,48.001],[2,48.001],[2,48]]]}`,
		`{"type":"Polygon","coordinates":[[[2,48],[2.001,48.001],[2.001,48],[2,48.001],[2,48]]]}`, // bowtie
		`{"type":"MultiPolygon","coordinates":[[[[179.9995,1],[180.0004,1],[180.0004,1.001],[179.9995,1.001],[179.9995,1]]]]}`,
		`{"type":"Polygon","coordinates":[[[3,48],[3.002,48],[3.002,48.002],[3.001,48],[3,48.002],[3,48]]]}`, // self-touching
		`{"type":"Polygon","coordinates":[[[4,48],[4.001,48],[4.002,48],[4,48]]]}`,                           // no area: collapses
		`{"type":"Polygon","coordinates":[[[5,-30],[5.01,-30],[5.01,-29.99],[5,-29.99],[5,-30]],[[5.002,-29.998],[5.002,-29.995],[5.005,-29.995],[5.002,-29.998]]]}`,
	}
	var sb strings.Builder
	sb.WriteString(`{"type":"FeatureCollection","features":[`)
	for i, g := range features {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"type":"Feature","properties":{"i":` + string(rune('0'+i)) + `},"geometry":` + g + `}`)
	}
	sb.WriteString(`]}`)
	path := filepath.Join(t.TempDir(), "flags.geojson")
	require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o644))

	for name, own := range map[string]int64{"own partition": 1, "shared partition": 1 << 40} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.svc.Store.(*Store).OwnPartitionBytes = own
			ctx := context.Background()

			p := ingest.DefaultParams("parcels")
			p.Invalid = ingest.PolicyFail
			res := b.svc.Run(ctx, localJob(t, path, p))
			require.Equal(t, ingest.Failed, res.Outcome)
			require.Equal(t, ingest.Permanent, ingest.KindOf(res.Err), "%v", res.Err)
			require.Contains(t, res.Err.Error(), "feature 1: invalid geometry: Self-intersection")
			require.Contains(t, res.Err.Error(), "(invalid policy is fail)")
			require.Contains(t, ingest.FailureHint(res.Err.Error()), "invalid=repair")
			var rows int64
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM parcels`).Scan(&rows))
			require.Zero(t, rows, "rolled back")

			res = b.svc.Run(ctx, localJob(t, path, ingest.DefaultParams("parcels")))
			require.NoError(t, res.Err)
			var n, repaired, skipped int64
			var ledgerArea, heldArea, postgisArea float64
			var mismatched, stillInvalid, outOfOrder int64
			require.NoError(t, b.pool.QueryRow(ctx, `
				SELECT j.feature_count, j.repaired_invalid, j.skipped_null, j.total_area_m2,
				       (SELECT sum(area_m2 ORDER BY id) FROM parcels WHERE job_ref = j.job_ref),
				       (SELECT sum(ST_Area(geom::geography) ORDER BY id) FROM parcels WHERE job_ref = j.job_ref),
				       (SELECT count(*) FROM parcels WHERE job_ref = j.job_ref AND `+areaOff+`),
				       (SELECT count(*) FROM parcels WHERE job_ref = j.job_ref AND NOT ST_IsValid(geom)),
				       (SELECT count(*) FROM (SELECT feature_index, row_number() OVER (ORDER BY id) AS a, row_number() OVER (ORDER BY feature_index) AS b
				                              FROM parcels WHERE job_ref = j.job_ref AND feature_index NOT IN (1, 3)) o WHERE a <> b)
				FROM jobs j WHERE j.job_id = $1`, res.JobID).
				Scan(&n, &repaired, &skipped, &ledgerArea, &heldArea, &postgisArea, &mismatched, &stillInvalid, &outOfOrder))
			require.EqualValues(t, 5, n, "six features, one collapsed")
			require.EqualValues(t, 3, repaired, "bowtie, self-touching ring, collapsed")
			require.EqualValues(t, 1, skipped, "the collapsed one")
			require.Zero(t, mismatched, "every row's area_m2 is ST_Area(geom::geography), to within geodesic's tolerance")
			require.Zero(t, stillInvalid)
			require.Zero(t, outOfOrder, "rows written in feature order")
			require.True(t, areaSumWithin(ledgerArea, postgisArea, n), "ledger %.17g, SUM(ST_Area) %.17g", ledgerArea, postgisArea)
			require.InEpsilon(t, heldArea, ledgerArea, 1e-12)
			v, err := b.svc.Store.(*Store).Verify(ctx)
			require.NoError(t, err)
			require.True(t, v.OK(), "%v", v.Problems)
		})
	}
}

// TestStagedRowsCheckedOnServer: features in another CRS are transformed,
// measured and checked by PostGIS; an invalid one among them is repaired,
// or named under the fail policy.
func TestStagedRowsCheckedOnServer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mercator.geojson")
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"FeatureCollection",
		"crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::3857"}},
		"features":[
		{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[250000,6100000],[250100,6100000],[250100,6100100],[250000,6100100],[250000,6100000]]]}},
		{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[260000,6100000],[260100,6100100],[260100,6100000],[260000,6100100],[260000,6100000]]]}}]}`), 0o644))
	p := ingest.DefaultParams("parcels")
	p.Invalid = ingest.PolicyFail
	res := b.svc.Run(ctx, localJob(t, path, p))
	require.Equal(t, ingest.Failed, res.Outcome)
	require.Contains(t, res.Err.Error(), "feature 1: invalid geometry: Self-intersection")
	require.Contains(t, res.Err.Error(), "(invalid policy is fail)")

	res = b.svc.Run(ctx, localJob(t, path, ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)
	var n, repaired, mismatched int64
	require.NoError(t, b.pool.QueryRow(ctx, `
		SELECT j.feature_count, j.repaired_invalid,
		       (SELECT count(*) FROM parcels WHERE job_ref = j.job_ref AND `+areaOff+`)
		FROM jobs j WHERE j.job_id = $1`, res.JobID).Scan(&n, &repaired, &mismatched))
	require.EqualValues(t, 2, n)
	require.EqualValues(t, 1, repaired)
	require.Zero(t, mismatched)
	v, err := b.svc.Store.(*Store).Verify(ctx)
	require.NoError(t, err)
	require.True(t, v.OK(), "%v", v.Problems)
}
