package shapefile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/geoingest/geoingest/geomio/fileset"
	"github.com/geoingest/geoingest/geomio/internal/core"
	shp "github.com/jonas-p/go-shp"
	"github.com/twpayne/go-geom"
)

// Where github.com/jonas-p/go-shp v0.1.1 falls short, geomio parses the .shp
// records itself and uses go-shp only for its shape type constants:
//
//   - it allocates slices sized by the untrusted NumParts/NumPoints of a
//     record before reading it (a corrupt count is an out-of-memory crash,
//     which recover cannot catch, or a panic on a negative count);
//   - it always reads the optional M section of Z shapes, so a PolyLineZ
//     without measures makes it read into the next record;
//   - its shape readers are unexported, so they cannot be applied to a
//     bounded, validated record buffer;
//   - its DBF reading ignores encodings (see dbf.go).

// shpSidecars holds the files of one shapefile set.
type shpSidecars struct {
	shp, dbf, prj, cpg string // paths; "" when absent
}

// FindSidecars finds the .dbf, .prj and .cpg beside shpPath
// (FindShapefileSet). The .shx is not needed: records are read in order
// from the .shp.
func FindSidecars(shpPath string) (shpSidecars, error) {
	set, err := fileset.FindShapefileSet(shpPath)
	return shpSidecars{shp: shpPath, dbf: set.Parts[".dbf"], prj: set.Parts[".prj"], cpg: set.Parts[".cpg"]}, err
}

// ShpReader reads one shapefile set.
type ShpReader struct {
	file   string // name used in errors (the path, or the path in a zip)
	opts   core.Options
	layer  core.Layer
	recZM  bool // the last record read is of a shape type with Z or M
	Files  []*os.File
	shp    *bufio.Reader
	dbf    *dbfReader
	shpOff int64
	// shpSize is the .shp's real size: no length the file declares is
	// trusted beyond it (the header's file length is not used at all).
	shpSize int64
	rec     []byte
	cur     []byte // the last .shp record's content (in rec)
	raw     *core.RawHasher
	shapes  ShapeDecoder
	recNo   int
	base    int64 // Index of the first feature (for multi-layer streams)
	idx     int64
	feat    core.Feature
	err     error
	done    bool
}

func Open(path, name string, opts core.Options) (core.Reader, error) {
	s, err := FindSidecars(path)
	if err != nil {
		return nil, &core.Error{File: path, Problem: "open", Err: err}
	}
	return OpenSet(s, path, core.LayerName(name), opts, 0)
}

// readSmall reads a small sidecar (.prj, .cpg), refusing large ones.
func readSmall(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<16+1))
	if err != nil {
		return "", err
	}
	if len(b) > 1<<16 {
		return "", fmt.Errorf("larger than %d bytes", 1<<16)
	}
	return string(b), nil
}

func OpenSet(s shpSidecars, file, name string, opts core.Options, base int64) (_ *ShpReader, err error) {
	r := &ShpReader{file: file, opts: opts, base: base, idx: base}
	r.layer = core.Layer{Name: name, Format: core.FormatShapefile}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if s.dbf == "" {
		return nil, &core.Error{File: file, Problem: "missing .dbf beside the .shp"}
	}
	var cpg string
	if s.cpg != "" {
		if cpg, err = readSmall(s.cpg); err != nil {
			return nil, &core.Error{File: s.cpg, Problem: "read .cpg", Err: err}
		}
	}
	var prj string
	if s.prj != "" {
		if prj, err = readSmall(s.prj); err != nil {
			return nil, &core.Error{File: s.prj, Problem: "read .prj", Err: err}
		}
	}
	prjName := strings.TrimSuffix(file, filepath.Ext(file)) + filepath.Ext(s.prj)
	if err := core.SetLayerCRS(&r.layer, prjName, strings.TrimSpace(prj), opts); err != nil {
		return nil, err
	}
	sf, err := os.Open(s.shp)
	if err != nil {
		return nil, &core.Error{File: file, Problem: "open", Err: err}
	}
	r.Files = append(r.Files, sf)
	fi, err := sf.Stat()
	if err != nil {
		return nil, &core.Error{File: file, Problem: "open", Err: err}
	}
	r.shpSize = fi.Size()
	r.shapes.maxVertices = opts.Limits.MaxVertices
	r.shp = bufio.NewReaderSize(sf, 1<<16)
	var h [100]byte
	if _, err := io.ReadFull(r.shp, h[:]); err != nil {
		return nil, &core.Error{File: file, Problem: "truncated .shp header", Err: err}
	}
	if binary.BigEndian.Uint32(h[0:4]) != 9994 {
		return nil, &core.Error{File: file, Problem: "not a shapefile: bad file code"}
	}
	r.shpOff = 100
	df, err := os.Open(s.dbf)
	if err != nil {
		return nil, &core.Error{File: s.dbf, Problem: "open", Err: err}
	}
	r.Files = append(r.Files, df)
	dbfName := strings.TrimSuffix(file, filepath.Ext(file)) + filepath.Ext(s.dbf)
	if r.dbf, err = OpenDBF(dbfName, df, cpg, opts.DefaultEncoding, opts.Limits.MaxRecordBytes); err != nil {
		return nil, err
	}
	r.layer.Encoding = r.dbf.encName
	// A record's raw hash is its .shp content's and .dbf record's, under
	// the fields and encoding the .dbf is read with (the .prj is the
	// layer's CRS, which the caller salts with).
	r.raw = core.NewRawHasher(opts.Limits, r.dbf.describe())
	return r, nil
}

func (r *ShpReader) Next() bool {
	if r.err != nil || r.done {
		return false
	}
	r.opts.Skip.Start()
	for {
		deleted, err := r.dbf.Next()
		if err == io.EOF {
			r.done = true
			return false
		}
		if err != nil {
			r.err = err
			return false
		}
		skip := !deleted && r.opts.Skip.Has(r.idx)
		g, err := r.nextShape(!r.opts.RawHashOnly && !skip)
		if err != nil {
			r.err = err
			return false
		}
		if deleted {
			continue // GDAL skips deleted records too
		}
		if r.opts.RawHashOnly {
			r.feat = core.Feature{Index: r.idx, Layer: r.layer.Name, RawHash: r.raw.Sum2(r.cur, r.dbf.rec)}
			r.idx++
			return true
		}
		if skip {
			r.idx++ // in opts.Skip: read past, neither decoded nor yielded
			continue
		}
		props, err := r.dbf.Properties()
		if err != nil {
			r.err = err
			return false
		}
		if g != nil {
			g = core.SetSRID(g, r.layer.SRID)
		}
		r.feat = core.Feature{Index: r.idx, Layer: r.layer.Name, Geom: g, Properties: props, DroppedZM: g != nil && r.recZM,
			RawHash: r.raw.Sum2(r.cur, r.dbf.rec), Members: r.dbf.Members()}
		r.idx++
		return true
	}
}

// nextShape reads the next .shp record (r.cur) and, when decode, decodes
// it, never panicking.
func (r *ShpReader) nextShape(decode bool) (g geom.T, err error) {
	off := r.shpOff
	defer func() {
		if p := recover(); p != nil {
			g, err = nil, &core.Error{File: r.file, Problem: fmt.Sprintf("record %d at byte %d: corrupt shape", r.recNo, off), Err: fmt.Errorf("%v", p)}
		}
	}()
	var h [8]byte
	if _, err := io.ReadFull(r.shp, h[:]); err != nil {
		return nil, &core.Error{File: r.file, Problem: fmt.Sprintf("record %d at byte %d: .shp has fewer records than the .dbf", r.recNo, off), Err: err}
	}
	n := int64(binary.BigEndian.Uint32(h[4:8])) * 2
	if n < 4 {
		return nil, &core.Error{File: r.file, Problem: fmt.Sprintf("record %d at byte %d: invalid content length %d", r.recNo, off, n)}
	}
	// Checked before the record's buffer is allocated: a declared
	// length is refused if the file does not hold it, or over the limit.
	if left := r.shpSize - off - 8; n > left {
		return nil, &core.Error{File: r.file, Problem: fmt.Sprintf("record %d at byte %d: truncated: content length %d, but the file has %d bytes left", r.recNo, off, n, max(left, 0))}
	}
	if n > r.opts.Limits.MaxRecordBytes {
		return nil, core.FeatureLimitError(r.file, r.layer.Name, r.idx, core.OverLimit(core.LimitFeatureBytes, r.opts.Limits.MaxRecordBytes, "more than %d bytes in one feature"))
	}
	// The point count a record declares is checked before the record is
	// read (it is in its first 44 bytes, which the reader's buffer holds).
	if head, err := r.shp.Peek(int(min(n, 44))); err == nil {
		if err := r.shapes.checkCounts(head, n); err != nil {
			return nil, core.FeatureLimitError(r.file, r.layer.Name, r.idx, err)
		}
	}
	if int64(cap(r.rec)) < n {
		r.rec = make([]byte, n)
	}
	rec := r.rec[:n]
	if _, err := io.ReadFull(r.shp, rec); err != nil {
		return nil, &core.Error{File: r.file, Problem: fmt.Sprintf("record %d at byte %d: truncated", r.recNo, off), Err: err}
	}
	r.shpOff += 8 + n
	r.recNo++
	r.cur = rec
	r.recZM = n >= 4 && core.ShapeHasZM(shp.ShapeType(binary.LittleEndian.Uint32(rec)))
	if !decode {
		return nil, nil
	}
	g, err = r.shapes.Decode(rec)
	if le := core.AsFeatureLimit(r.file, r.layer.Name, r.idx, err); le != nil {
		return nil, le
	}
	if err != nil {
		return nil, &core.Error{File: r.file, Problem: fmt.Sprintf("record %d at byte %d", r.recNo-1, off), Err: err}
	}
	return g, nil
}

// ShapeDecoder decodes one record's content (starting with its shape
// type) to a normalised go-geom geometry: XY only, polygons as
// MultiPolygon, nil for null and empty shapes. It decodes into buffers it
// reuses: the geometry it returns is valid until its next decode (as a
// Reader's Feature is until its next Next). The zero value is ready.
type ShapeDecoder struct {
	pts    []float64   // the record's points
	starts []int       // its parts' first points
	parts  [][]float64 // its parts, slices of pts
	poly   polygonBuffers
	// maxVertices, when positive, is Limits.MaxVertices: a record that
	// declares more points is refused before they are read.
	maxVertices int64
}

// checkCounts checks the point count declared at the start of a record's
// content (head, its first bytes; n bytes in all) against maxVertices. A
// count the record cannot hold is not a limit's business: decode refuses
// the record as corrupt.
func (d *ShapeDecoder) checkCounts(head []byte, n int64) *core.LimitError {
	if d.maxVertices <= 0 || len(head) < 40 {
		return nil
	}
	var np int64
	switch shp.ShapeType(binary.LittleEndian.Uint32(head[0:4])) {
	case shp.MULTIPOINT, shp.MULTIPOINTZ, shp.MULTIPOINTM:
		np = int64(int32(binary.LittleEndian.Uint32(head[36:40])))
	case shp.POLYLINE, shp.POLYLINEZ, shp.POLYLINEM, shp.POLYGON, shp.POLYGONZ, shp.POLYGONM:
		if len(head) < 44 {
			return nil
		}
		np = int64(int32(binary.LittleEndian.Uint32(head[40:44])))
	}
	if np > d.maxVertices && 16*np <= n {
		return core.OverLimit(core.LimitVertices, d.maxVertices, "more than %d vertices")
	}
	return nil
}

// Decode is decodeShape with d's buffers.
func (d *ShapeDecoder) Decode(b []byte) (geom.T, error) {
	le := binary.LittleEndian
	typ := shp.ShapeType(le.Uint32(b[0:4]))
	switch typ {
	case shp.NULL:
		return nil, nil
	case shp.POINT, shp.POINTZ, shp.POINTM:
		if len(b) < 20 {
			return nil, fmt.Errorf("point record of %d bytes", len(b))
		}
		x, y := f64(b[4:]), f64(b[12:])
		if !core.Finite(x, y) {
			return nil, nil // "no data" points
		}
		return geom.NewPointFlat(geom.XY, []float64{x, y}), nil
	case shp.MULTIPOINT, shp.MULTIPOINTZ, shp.MULTIPOINTM:
		if len(b) < 40 {
			return nil, fmt.Errorf("multipoint record of %d bytes", len(b))
		}
		np := int64(int32(le.Uint32(b[36:40])))
		if np < 0 || 40+16*np > int64(len(b)) {
			return nil, fmt.Errorf("multipoint with %d points in %d bytes", np, len(b))
		}
		if np == 0 {
			return nil, nil
		}
		if d.maxVertices > 0 && np > d.maxVertices {
			return nil, core.OverLimit(core.LimitVertices, d.maxVertices, "more than %d vertices")
		}
		flat, err := appendPoints(d.pts[:0], b[40:], int(np))
		d.pts = flat
		if err != nil {
			return nil, err
		}
		return geom.NewMultiPointFlat(geom.XY, flat[:len(flat):len(flat)]), nil
	case shp.POLYLINE, shp.POLYLINEZ, shp.POLYLINEM, shp.POLYGON, shp.POLYGONZ, shp.POLYGONM:
		if len(b) < 44 {
			return nil, fmt.Errorf("record of %d bytes", len(b))
		}
		nparts := int64(int32(le.Uint32(b[36:40])))
		np := int64(int32(le.Uint32(b[40:44])))
		if nparts < 0 || np < 0 || 44+4*nparts+16*np > int64(len(b)) {
			return nil, fmt.Errorf("%d parts and %d points in %d bytes", nparts, np, len(b))
		}
		if nparts == 0 || np == 0 {
			return nil, nil
		}
		if d.maxVertices > 0 && np > d.maxVertices {
			return nil, core.OverLimit(core.LimitVertices, d.maxVertices, "more than %d vertices")
		}
		flat, err := appendPoints(d.pts[:0], b[44+4*nparts:], int(np))
		d.pts = flat
		if err != nil {
			return nil, err
		}
		starts := slices.Grow(d.starts[:0], int(nparts))[:nparts]
		d.starts = starts
		for i := range starts {
			s := int64(int32(le.Uint32(b[44+4*i:])))
			if s < 0 || s >= np || (i > 0 && s < int64(starts[i-1])) {
				return nil, fmt.Errorf("part %d starts at invalid point %d", i, s)
			}
			starts[i] = int(s)
		}
		parts := slices.Grow(d.parts[:0], int(nparts))
		for i, s := range starts {
			e := int(np)
			if i+1 < len(starts) {
				e = starts[i+1]
			}
			parts = append(parts, flat[2*s:2*e])
		}
		d.parts = parts // slices of d.pts only
		if typ == shp.POLYLINE || typ == shp.POLYLINEZ || typ == shp.POLYLINEM {
			return lines(parts), nil // copies: lines are rare in parcel data
		}
		return d.poly.polygons(parts), nil
	case shp.MULTIPATCH:
		return nil, fmt.Errorf("multipatch shapes are not supported")
	}
	return nil, fmt.Errorf("unknown shape type %d", typ)
}

func f64(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }

// appendPoints appends the n points at the start of b to flat.
func appendPoints(flat []float64, b []byte, n int) ([]float64, error) {
	k := len(flat)
	flat = slices.Grow(flat, 2*n)[:k+2*n]
	for i := 0; i < n; i++ {
		x, y := f64(b[16*i:]), f64(b[16*i+8:])
		if !core.Finite(x, y) {
			return flat[:k], fmt.Errorf("non-finite coordinate at point %d", i)
		}
		flat[k+2*i], flat[k+2*i+1] = x, y
	}
	return flat, nil
}

// lines builds a MultiLineString from parts, dropping parts with fewer
// than two points; nil if none is left.
func lines(parts [][]float64) geom.T {
	var flat []float64
	var ends []int
	for _, p := range parts {
		if len(p) < 4 {
			continue
		}
		flat = append(flat, p...)
		ends = append(ends, len(flat))
	}
	if len(ends) == 0 {
		return nil
	}
	return geom.NewMultiLineStringFlat(geom.XY, flat, ends)
}

// signedArea is twice the signed area of ring (positive when
// counter-clockwise).
func signedArea(ring []float64) float64 {
	var a float64
	n := len(ring) / 2
	for i := 0; i < n; i++ {
		j := (i + 1) % n
		a += ring[2*i]*ring[2*j+1] - ring[2*j]*ring[2*i+1]
	}
	return a
}

// inRing reports whether (x, y) lies inside ring (even-odd rule).
func inRing(ring []float64, x, y float64) bool {
	in := false
	n := len(ring) / 2
	for i, j := 0, n-1; i < n; j, i = i, i+1 {
		xi, yi, xj, yj := ring[2*i], ring[2*i+1], ring[2*j], ring[2*j+1]
		if (yi > y) != (yj > y) && x < (xj-xi)*(y-yi)/(yj-yi)+xi {
			in = !in
		}
	}
	return in
}

// polygonBuffers are the buffers polygons reuses from one call to the next:
// the geometry it returns is valid until the next call.
type polygonBuffers struct {
	outers []shpPoly
	holes  [][]float64
	flat   []float64
	ends   []int
	endss  [][]int
}

// shpPoly is an outer ring, its area, its bounding box and its holes,
// indexes into holes.
type shpPoly struct {
	outer                  []float64
	area                   float64
	minX, minY, maxX, maxY float64
	holes                  []int
}

// newShpPoly is the shpPoly of ring, with its bounding box.
func newShpPoly(ring []float64, area float64) shpPoly {
	p := shpPoly{outer: ring, area: area, minX: ring[0], maxX: ring[0], minY: ring[1], maxY: ring[1]}
	for i := 2; i < len(ring); i += 2 {
		p.minX, p.maxX = min(p.minX, ring[i]), max(p.maxX, ring[i])
		p.minY, p.maxY = min(p.minY, ring[i+1]), max(p.maxY, ring[i+1])
	}
	return p
}

// mayContain reports whether (x, y) is within p's bounding box: a point
// outside it is outside the ring, so only a point within needs inRing.
func (p *shpPoly) mayContain(x, y float64) bool {
	return x >= p.minX && x <= p.maxX && y >= p.minY && y <= p.maxY
}

// polygons groups shapefile rings into a MultiPolygon: clockwise rings are
// outer rings, counter-clockwise rings are holes of the smallest outer ring
// that contains their first point. A hole that no outer ring contains
// becomes a polygon of its own; if there is no clockwise ring at all, every
// ring is taken as an outer ring. Rings with fewer than four points are
// dropped; nil if none is left.
func (b *polygonBuffers) polygons(rings [][]float64) geom.T {
	if len(rings) == 1 && len(rings[0]) >= 8 {
		// One ring, the common parcel: outer ring or lone hole, it is
		// the one polygon, and its points need no copy.
		b.ends = append(b.ends[:0], len(rings[0]))
		b.endss = append(b.endss[:0], b.ends[:1:1])
		r := rings[0]
		return geom.NewMultiPolygonFlat(geom.XY, r[:len(r):len(r)], b.endss[:1:1])
	}
	outers := b.outers[:0]
	holes := b.holes[:0]
	for _, r := range rings {
		if len(r) < 8 {
			continue
		}
		if a := signedArea(r); a < 0 {
			outers = append(outers, newShpPoly(r, -a))
		} else {
			holes = append(holes, r)
		}
	}
	for hi, h := range holes {
		best := -1
		for oi := range outers { // a lone hole made a polygon can take holes, as it always could
			o := &outers[oi]
			if o.mayContain(h[0], h[1]) && inRing(o.outer, h[0], h[1]) && (best < 0 || o.area < outers[best].area) {
				best = oi
			}
		}
		if best >= 0 {
			outers[best].holes = append(outers[best].holes, hi)
		} else {
			outers = append(outers, newShpPoly(h, 0))
		}
	}
	b.outers, b.holes = outers[:0], holes[:0]
	if len(outers) == 0 {
		return nil
	}
	flat, ends := b.flat[:0], b.ends[:0]
	for _, p := range outers {
		flat = append(flat, p.outer...)
		ends = append(ends, len(flat))
		for _, h := range p.holes {
			flat = append(flat, holes[h]...)
			ends = append(ends, len(flat))
		}
	}
	endss := b.endss[:0]
	k := 0
	for _, p := range outers {
		n := 1 + len(p.holes)
		endss = append(endss, ends[k:k+n:k+n])
		k += n
	}
	b.flat, b.ends, b.endss = flat, ends, endss
	return geom.NewMultiPolygonFlat(geom.XY, flat[:len(flat):len(flat)], endss[:len(endss):len(endss)])
}

func (r *ShpReader) Feature() core.Feature { return r.feat }
func (r *ShpReader) Layer() core.Layer     { return r.layer }
func (r *ShpReader) Err() error            { return r.err }

func (r *ShpReader) Close() error {
	var first error
	for _, f := range r.Files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.Files = nil
	return first
}

func (r *ShpReader) NextIndex() int64 { return r.idx }
