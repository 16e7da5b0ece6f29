// Command hostile writes the hostile uploads that scripts/bench-hostile.sh
// feeds to geoingest to measure its peak memory under the default limits
// (docs/benchmarks.md): features far over each limit, features just under
// them, and archives whose headers lie. The files are generated, never
// committed: some are over 100 MB.
//
//	go run ./internal/testsupport/hostile DIR
//	go run ./internal/testsupport/hostile -corpus DIR
//
// It prints the names of the files it wrote, one a line. With -corpus it
// writes only the sandbox's cases (internal/testsupport/hostile/corpus), the files
// scripts/hostile-audit.sh reads.
package main

import (
	"archive/zip"
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/geoingest/geoingest/internal/testsupport/hostile/corpus"
)

func main() {
	args := os.Args[1:]
	corpusOnly := len(args) == 2 && args[0] == "-corpus"
	if corpusOnly {
		args = args[1:]
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: hostile [-corpus] DIR")
		os.Exit(2)
	}
	dir := args[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatal(err)
	}
	for _, c := range cases {
		if corpusOnly {
			break
		}
		p := filepath.Join(dir, c.name)
		if _, err := os.Stat(p); err != nil {
			if err := c.write(p); err != nil {
				fatal(fmt.Errorf("%s: %w", c.name, err))
			}
		}
		fmt.Println(c.name)
	}
	// The sandbox's cases (#34): uploads that name URLs, virtual file
	// systems and files outside their folder, or spin and swell GDAL.
	env := corpus.Env{Addr: "127.0.0.1:9", Outside: filepath.Join(dir, "outside")}
	if err := corpus.WriteOutside(env); err != nil {
		fmt.Fprintln(os.Stderr, "hostile: the sandbox cases need GDAL's tools:", err)
		return
	}
	for _, c := range corpus.Cases() {
		sub := filepath.Join(dir, "sandbox-"+c.Name)
		if ents, err := os.ReadDir(sub); err == nil && len(ents) > 0 {
			fmt.Println(filepath.Join("sandbox-"+c.Name, upload(ents)))
			continue
		}
		if err := os.MkdirAll(sub, 0o755); err != nil {
			fatal(err)
		}
		p, err := c.Write(sub, env)
		if err != nil {
			fatal(fmt.Errorf("%s: %w", c.Name, err))
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Println(rel)
	}
}

// upload is the name of the upload among a sandbox case's files: the one
// that is not a schema or a MapInfo table's part.
func upload(ents []os.DirEntry) string {
	for _, e := range ents {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".xsd", ".gfs", ".dat", ".map", ".id", ".dbf", ".shx", ".prj", ".cpg":
			continue
		}
		return e.Name()
	}
	return ents[0].Name()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "hostile:", err)
	os.Exit(1)
}

var cases = []struct {
	name  string
	write func(path string) error
}{
	{"vertices-3m.geojson", func(p string) error { return ringFeature(p, 3_000_000, 14) }},
	{"vertices-1m-short.geojson", func(p string) error { return ringFeature(p, 1_000_000, 0) }},
	{"vertices-349k.geojson", func(p string) error { return ringFeature(p, 349_000, 14) }},
	{"properties-15mb.geojson", func(p string) error {
		return feature(p, func(w *bufio.Writer) {
			w.WriteString("{")
			for i := 0; i < 15; i++ {
				if i > 0 {
					w.WriteString(",")
				}
				fmt.Fprintf(w, `"p%d":"%s"`, i, strings.Repeat("x", 1_000_000))
			}
			w.WriteString("}")
		}, square)
	}},
	{"property-50mb.geojson", func(p string) error {
		return feature(p, func(w *bufio.Writer) { fmt.Fprintf(w, `{"big":"%s"}`, strings.Repeat("x", 50<<20)) }, square)
	}},
	{"keys-200k.geojson", func(p string) error {
		return feature(p, func(w *bufio.Writer) {
			w.WriteString("{")
			for i := 0; i < 200_000; i++ {
				if i > 0 {
					w.WriteString(",")
				}
				fmt.Fprintf(w, `"k%d":%d`, i, i)
			}
			w.WriteString("}")
		}, square)
	}},
	{"holes-20k.geojson", func(p string) error {
		return feature(p, nil, func(w *bufio.Writer) {
			w.WriteString(`{"type":"Polygon","coordinates":[[[0,0],[0,1],[1,1],[1,0],[0,0]]`)
			for i := 0; i < 20_000; i++ {
				x, y := 0.001+float64(i%140)*0.007, 0.001+float64(i/140)*0.007
				fmt.Fprintf(w, `,[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]`, x, y, x+0.003, y, x+0.003, y+0.003, x, y+0.003, x, y)
			}
			w.WriteString(`]}`)
		})
	}},
	{"parts-20k.geojson", func(p string) error {
		return feature(p, nil, func(w *bufio.Writer) {
			w.WriteString(`{"type":"MultiPolygon","coordinates":[`)
			for i := 0; i < 20_000; i++ {
				if i > 0 {
					w.WriteString(",")
				}
				x, y := float64(i%200)*0.01, float64(i/200)*0.01
				fmt.Fprintf(w, `[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]`, x, y, x+0.005, y, x+0.005, y+0.005, x, y+0.005, x, y)
			}
			w.WriteString(`]}`)
		})
	}},
	{"header-10gb.shp", lyingShapefile},
	// KML, streamed (geomio/kml): 13,000 and 130,000 parcels (the same
	// peak), one coordinates string of 56 MB (refused at
	// --max-feature-bytes, never held whole), elements nested 1,000,000
	// deep (refused at depth 100).
	{"kml-13k.kml", func(p string) error { return kmlParcels(p, 13_000) }},
	{"kml-130k.kml", func(p string) error { return kmlParcels(p, 130_000) }},
	{"kml-coords-56mb.kml", func(p string) error {
		return writeFile(p, func(w *bufio.Writer) {
			w.WriteString(`<kml><Document><Placemark><LineString><coordinates>`)
			for i := 0; i < 5_000_000; i++ {
				fmt.Fprintf(w, "%d.5,%d.25 ", i%180, i%90)
			}
			w.WriteString(`</coordinates></LineString></Placemark></Document></kml>`)
		})
	}},
	{"kml-deep.kml", func(p string) error {
		return writeFile(p, func(w *bufio.Writer) {
			w.WriteString(`<kml><Document><Placemark>`)
			for i := 0; i < 1_000_000; i++ {
				w.WriteString(`<MultiGeometry>`)
			}
		})
	}},
	{"rings-20k.shp", func(p string) error { return ringsShapefile(p, 10_000) }},
	{"vertices-3m.shp", func(p string) error { return ringShapefile(p, 3_000_000) }},
	{"vertices-2m.shp", func(p string) error { return ringShapefile(p, 2_000_000) }},
	{"vertices-999k.shp", func(p string) error { return ringShapefile(p, 999_000) }},
	{"vertices-499k.shp", func(p string) error { return ringShapefile(p, 499_000) }},
	{"vertices-349k.shp", func(p string) error { return ringShapefile(p, 349_000) }},
	{"entries-100k.zip", func(p string) error {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		zw := zip.NewWriter(bufio.NewWriter(f))
		for i := 0; i < 100_000; i++ {
			if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("d/%06d.txt", i), Method: zip.Store}); err != nil {
				return err
			}
		}
		if err := zw.Close(); err != nil {
			return err
		}
		return f.Close()
	}},
}

// feature writes a FeatureCollection of one feature with the given
// properties and geometry writers (nil properties: {"id":1}).
func feature(p string, props, geometry func(*bufio.Writer)) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":`)
	if props == nil {
		w.WriteString(`{"id":1}`)
	} else {
		props(w)
	}
	w.WriteString(`,"geometry":`)
	geometry(w)
	w.WriteString("}]}\n")
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func square(w *bufio.Writer) {
	w.WriteString(`{"type":"Polygon","coordinates":[[[0,0],[0,1],[1,1],[1,0],[0,0]]]}`)
}

// circle returns vertex i of an n-gon (closed: vertex n is vertex 0)
// around a point in France, as a parcel's coordinates would be written.
func circle(i, n int) (float64, float64) {
	a := 2 * math.Pi * float64(i%n) / float64(n)
	return 2.35 + 0.01*math.Cos(a), 48.85 + 0.01*math.Sin(a)
}

// ringFeature writes one polygon whose ring has n vertices, with prec
// decimals.
func ringFeature(p string, n, prec int) error {
	return feature(p, nil, func(w *bufio.Writer) {
		w.WriteString(`{"type":"Polygon","coordinates":[[`)
		for i := 0; i <= n; i++ {
			if i > 0 {
				w.WriteString(",")
			}
			x, y := circle(-i, n) // clockwise is fine: GeoJSON rings are not oriented here
			fmt.Fprintf(w, "[%.*f,%.*f]", prec, x, prec, y)
		}
		w.WriteString(`]]}`)
	})
}

// shpHeader is a .shp (or .shx) header of fileWords 16-bit words.
func shpHeader(fileWords uint32) []byte {
	h := make([]byte, 100)
	binary.BigEndian.PutUint32(h[0:], 9994)
	binary.BigEndian.PutUint32(h[24:], fileWords)
	binary.LittleEndian.PutUint32(h[28:], 1000)
	binary.LittleEndian.PutUint32(h[32:], 5)
	return h
}

// lyingShapefile writes a .shp whose header claims the largest file a
// shapefile header can state (8 GiB) and whose one record claims a
// content of nearly that, with a one-record .dbf and a .prj.
func lyingShapefile(p string) error {
	b := shpHeader(math.MaxUint32)
	rec := make([]byte, 8+44)
	binary.BigEndian.PutUint32(rec[0:], 1)
	binary.BigEndian.PutUint32(rec[4:], math.MaxUint32-100) // content length in words
	binary.LittleEndian.PutUint32(rec[8:], 5)
	binary.LittleEndian.PutUint32(rec[8+36:], 1)
	binary.LittleEndian.PutUint32(rec[8+40:], 5)
	if err := os.WriteFile(p, append(b, rec...), 0o644); err != nil {
		return err
	}
	return sidecars(p)
}

// ringShapefile writes a .shp of one polygon whose ring has n vertices.
func ringShapefile(p string, n int) error {
	content := 44 + 4 + 16*(n+1)
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(shpHeader(uint32((100 + 8 + content) / 2)))
	var b [8]byte
	binary.BigEndian.PutUint32(b[0:], 1)
	binary.BigEndian.PutUint32(b[4:], uint32(content/2))
	w.Write(b[:])
	h := make([]byte, 48)
	binary.LittleEndian.PutUint32(h[0:], 5)
	binary.LittleEndian.PutUint32(h[36:], 1)
	binary.LittleEndian.PutUint32(h[40:], uint32(n+1))
	w.Write(h) // bbox left zero; part 0 starts at point 0
	for i := 0; i <= n; i++ {
		x, y := circle(-i, n)
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		w.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(y))
		w.Write(b[:])
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return sidecars(p)
}

// sidecars writes the .dbf (one record, field ID) and the .prj (WGS 84)
// beside the .shp at p.
func sidecars(p string) error {
	base := strings.TrimSuffix(p, filepath.Ext(p))
	dbf := make([]byte, 32+32+1)
	dbf[0] = 3
	binary.LittleEndian.PutUint32(dbf[4:], 1)
	binary.LittleEndian.PutUint16(dbf[8:], 65)
	binary.LittleEndian.PutUint16(dbf[10:], 1+4)
	copy(dbf[32:], "ID")
	dbf[32+11] = 'N'
	dbf[32+16] = 4
	dbf[64] = 0x0D
	dbf = append(dbf, ' ', ' ', ' ', ' ', '1', 0x1A)
	if err := os.WriteFile(base+".dbf", dbf, 0o644); err != nil {
		return err
	}
	return os.WriteFile(base+".prj", []byte(`GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`), 0o644)
}

// ringsShapefile writes a .shp of one polygon record of n outer rings,
// each with a hole: 2n parts, each hole to be matched to its outer ring.
func ringsShapefile(p string, n int) error {
	var parts [][][2]float64
	for i := 0; i < n; i++ {
		x, y := float64(i%100)*0.01, float64(i/100)*0.01
		// Outer rings clockwise, holes counter-clockwise.
		parts = append(parts,
			[][2]float64{{x, y}, {x, y + 0.008}, {x + 0.008, y + 0.008}, {x + 0.008, y}, {x, y}},
			[][2]float64{{x + 0.002, y + 0.002}, {x + 0.006, y + 0.002}, {x + 0.006, y + 0.006}, {x + 0.002, y + 0.006}, {x + 0.002, y + 0.002}})
	}
	np := 0
	for _, r := range parts {
		np += len(r)
	}
	content := 44 + 4*len(parts) + 16*np
	b := shpHeader(uint32((100 + 8 + content) / 2))
	rec := make([]byte, 8+content)
	binary.BigEndian.PutUint32(rec[0:], 1)
	binary.BigEndian.PutUint32(rec[4:], uint32(content/2))
	c := rec[8:]
	binary.LittleEndian.PutUint32(c[0:], 5)
	binary.LittleEndian.PutUint32(c[36:], uint32(len(parts)))
	binary.LittleEndian.PutUint32(c[40:], uint32(np))
	k := 0
	pts := c[44+4*len(parts):]
	for i, r := range parts {
		binary.LittleEndian.PutUint32(c[44+4*i:], uint32(k))
		for _, pt := range r {
			binary.LittleEndian.PutUint64(pts[16*k:], math.Float64bits(2.35+pt[0]))
			binary.LittleEndian.PutUint64(pts[16*k+8:], math.Float64bits(48.85+pt[1]))
			k++
		}
	}
	if err := os.WriteFile(p, append(b, rec...), 0o644); err != nil {
		return err
	}
	return sidecars(p)
}

// kmlParcels writes a KML document of n parcels as ogr2ogr writes them:
// one folder, each placemark with its ExtendedData (five fields) and a
// polygon of six positions.
func kmlParcels(p string, n int) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	w.WriteString(`<?xml version="1.0" encoding="utf-8" ?>
<kml xmlns="http://www.opengis.net/kml/2.2">
<Document id="root_doc">
<Schema name="parcels" id="parcels">
	<SimpleField name="parcel_id" type="string"></SimpleField>
	<SimpleField name="owner" type="string"></SimpleField>
	<SimpleField name="land_use" type="string"></SimpleField>
	<SimpleField name="assessed_v" type="float"></SimpleField>
	<SimpleField name="year" type="int"></SimpleField>
</Schema>
<Folder><name>parcels</name>
`)
	for i := 0; i < n; i++ {
		x, y := 13+float64(i%1000)*0.001, 52+float64(i/1000)*0.001
		fmt.Fprintf(w, `  <Placemark>
	<ExtendedData><SchemaData schemaUrl="#parcels">
		<SimpleData name="parcel_id">BE-%04d-%04d</SimpleData>
		<SimpleData name="owner">Owner number %d</SimpleData>
		<SimpleData name="land_use">R1</SimpleData>
		<SimpleData name="assessed_v">%d.25</SimpleData>
		<SimpleData name="year">1920</SimpleData>
	</SchemaData></ExtendedData>
      <Polygon><outerBoundaryIs><LinearRing><coordinates>%.7f,%.7f %.7f,%.7f %.7f,%.7f %.7f,%.7f %.7f,%.7f %.7f,%.7f</coordinates></LinearRing></outerBoundaryIs></Polygon>
  </Placemark>
`, i/1000, i%1000, i, 1000*i, x, y, x+0.0008, y, x+0.0009, y+0.0004, x+0.0008, y+0.0008, x, y+0.0008, x, y)
	}
	w.WriteString("</Folder>\n</Document></kml>\n")
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeFile writes p with body.
func writeFile(p string, body func(*bufio.Writer)) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	body(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
