package reportcells

import (
	"encoding/binary"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/geoingest/geoingest/geomio/geodesic"
	"github.com/geoingest/geoingest/geomio/overlay"
	"github.com/geoingest/geoingest/internal/tools/benchyear/parcel"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// testParcel is a parcel as the writer holds it.
type testParcel struct {
	mp   *geom.MultiPolygon
	ewkb []byte
	area float64
}

// adminUnits is parcel.AdminUnitsDetailed(12, 10, detail) as Units, and
// the WKB of their union.
func adminUnits(tb testing.TB, detail int, extra ...parcel.Admin) ([]Unit, []byte) {
	tb.Helper()
	var units []Unit
	c := overlay.New()
	defer c.Close()
	var gs []*overlay.Geom
	for _, a := range append(parcel.AdminUnitsDetailed(12, 10, detail), extra...) {
		flat := make([]float64, 0, 2*len(a.Ring))
		for _, p := range a.Ring {
			flat = append(flat, p.X, p.Y)
		}
		pg := geom.NewPolygonFlat(geom.XY, flat, []int{len(flat)}).SetSRID(4326)
		b, err := wkb.Marshal(pg, binary.LittleEndian)
		if err != nil {
			tb.Fatal(err)
		}
		units = append(units, Unit{ID: int64(a.ID) + 1, WKB: b})
		g, err := c.Read(b)
		if err != nil {
			tb.Fatal(err)
		}
		gs = append(gs, g)
	}
	u, err := c.Union(gs)
	if err != nil {
		tb.Fatal(err)
	}
	cov, err := c.AppendWKB(nil, u)
	if err != nil {
		tb.Fatal(err)
	}
	c.Free(u)
	for _, g := range gs {
		c.Free(g)
	}
	return units, cov
}

// countyParcels is n parcels of the generator's grid in the middle
// sixteenth of its extent (the county of BenchmarkReportRefresh).
func countyParcels(tb testing.TB, n int, x0, y0 float64) []testParcel {
	tb.Helper()
	g := parcel.NewGrid(n)
	box := [4]float64{x0, y0, x0 + (parcel.MaxLon-parcel.MinLon)/4, y0 + (parcel.MaxLat-parcel.MinLat)/4}
	out := make([]testParcel, 0, n)
	for i := 0; i < n; i++ {
		f := g.Make(i)
		f.Fit(box)
		mp := geom.NewMultiPolygon(geom.XY).SetSRID(4326)
		for _, p := range f.Polys {
			var flat []float64
			var ends []int
			for _, r := range p {
				for _, pt := range r {
					flat = append(flat, pt.X, pt.Y)
				}
				ends = append(ends, len(flat))
			}
			if err := mp.Push(geom.NewPolygonFlat(geom.XY, flat, ends)); err != nil {
				tb.Fatal(err)
			}
		}
		b, err := ewkb.Marshal(mp, binary.LittleEndian)
		if err != nil {
			tb.Fatal(err)
		}
		a, ok := geodesic.Area(mp, nil)
		if !ok {
			tb.Fatal("no area")
		}
		out = append(out, testParcel{mp, b, a})
	}
	return out
}

// tally adds the parcels on workers goroutines.
func tally(gen *Generation, ps []testParcel, workers int) *Tally {
	t := NewTally(gen)
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := t.Worker()
			defer w.Close()
			for i := k; i < len(ps); i += workers {
				w.Add(ps[i].mp, ps[i].ewkb, ps[i].area)
			}
		}()
	}
	wg.Wait()
	return t
}

func envInt(tb testing.TB, name string, def int) int {
	if s := os.Getenv(name); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
	return def
}

// BenchmarkTally: the writer's cells of BenchmarkReportRefresh's county
// (25,000 parcels; GEOINGEST_BENCH_N) against its 120 admin units
// (GEOINGEST_BENCH_ADMIN_DETAIL, default 9: about 2,000 vertices each),
// on two workers, with no database: warm, a generation that earlier jobs
// used (its grids and clips made), and cold, a new generation per job.
// ns/parcel is the CPU the writer spends per parcel (both workers).
//
//	go test ./ingest/reportcells -run '^$' -bench Tally -benchtime 20x
func BenchmarkTally(b *testing.B) {
	n := envInt(b, "GEOINGEST_BENCH_N", 25000)
	detail := envInt(b, "GEOINGEST_BENCH_ADMIN_DETAIL", 9)
	units, cov := adminUnits(b, detail)
	w, h := (parcel.MaxLon-parcel.MinLon)/4, (parcel.MaxLat-parcel.MinLat)/4
	ps := countyParcels(b, n, parcel.MinLon+1.5*w, parcel.MinLat+1.5*h)
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			gen, err := NewGeneration("g", units, nil, cov)
			if err != nil {
				b.Fatal(err)
			}
			tally(gen, ps, 2)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if cold {
					b.StopTimer()
					gen, _ = NewGeneration("g", units, nil, cov)
					b.StartTimer()
				}
				t := tally(gen, ps, 2)
				if _, got, ok, why := t.Cells(); !ok || got != int64(n) {
					b.Fatalf("%d parcels, %v %s", got, ok, why)
				}
				if i == 0 {
					b.Logf("%+v", t.Stats())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/parcel")
		})
	}
}
