package geojson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/jsonscan"
	"github.com/geoingest/geoingest/geomio/lonlat"
	"github.com/paulmach/orb/geojson"
	"github.com/twpayne/go-geom"
)

// ErrRecordTooLarge is returned by a limitReader when one record (a feature)
// would exceed Limits.MaxRecordBytes.
var ErrRecordTooLarge = errors.New("record exceeds size limit")

// LimitReader counts the bytes read and refuses to read past limit, so
// that a json.Decoder cannot buffer an unbounded value.
type LimitReader struct {
	R     io.Reader
	N     int64
	Limit int64
}

func (l *LimitReader) Read(p []byte) (int, error) {
	if l.N >= l.Limit {
		return 0, ErrRecordTooLarge
	}
	if int64(len(p)) > l.Limit-l.N {
		p = p[:l.Limit-l.N]
	}
	n, err := l.R.Read(p)
	l.N += int64(n)
	return n, err
}

// decoderSlack is how many bytes beyond MaxRecordBytes a decoder may have
// read ahead of its current value.
const decoderSlack = 1 << 16

// featureJSON is one GeoJSON Feature, with geometry and properties kept raw.
type featureJSON struct {
	Type       string          `json:"type"`
	Geometry   json.RawMessage `json:"geometry"`
	Properties json.RawMessage `json:"properties"`
	ID         json.RawMessage `json:"id"`
}

// geojsonReader reads a GeoJSON FeatureCollection (streamed), a single
// Feature or a bare geometry.
type geojsonReader struct {
	path string // the file read
	name string // the file named in errors

	f      *os.File
	lr     *LimitReader
	dec    *json.Decoder
	opts   core.Options
	layer  core.Layer
	lonLat bool // SRID 4326 by RFC 7946 default: check coordinates

	streaming bool         // inside the features array
	pending   *featureJSON // the single Feature of a non-collection file
	done      bool
	bom       int64     // length of the byte order mark skipped
	pipe      *pipeline // decodes the features array
	Tune      tuning
	// assumedCRS: the crs member (crsRaw, nil for none) was taken from
	// the end of the file (see trailingMember), to be checked once the
	// end of the features array is known.
	assumedCRS bool
	crsRaw     json.RawMessage

	idx  int64
	feat core.Feature
	err  error
}

func Open(path string, opts core.Options) (*geojsonReader, error) {
	return OpenAs(path, path, core.LayerName(path), 0, opts)
}

// OpenAs opens the GeoJSON file at path as the layer called layer
// whose first feature has Index base, naming it file in errors (a zip
// entry is read from a temporary copy but named archive/entry).
func OpenAs(path, file, layer string, base int64, opts core.Options) (*geojsonReader, error) {
	return openTuned(path, file, layer, base, opts, defaultTuning)
}

func openTuned(path, file, layer string, base int64, opts core.Options, tune tuning) (*geojsonReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &core.Error{File: file, Problem: "open", Err: err}
	}
	r := &geojsonReader{path: path, name: file, f: f, opts: opts, idx: base, Tune: tune}
	r.layer = core.Layer{Name: layer, Format: core.FormatGeoJSON}
	br := bufio.NewReaderSize(f, 1<<16)
	if SkipBOM(br) {
		r.bom = 3
	}
	r.lr = &LimitReader{R: br, Limit: opts.Limits.MaxRecordBytes + decoderSlack}
	r.dec = json.NewDecoder(r.lr)
	if err := r.readHeader(); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// SkipBOM drops a UTF-8 byte order mark, which encoding/json refuses, and
// reports whether there was one.
func SkipBOM(br *bufio.Reader) bool {
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		br.Discard(3)
		return true
	}
	return false
}

func (r *geojsonReader) fail(problem string, err error) *core.Error {
	if errors.Is(err, ErrRecordTooLarge) {
		return core.FeatureLimitError(r.name, r.layer.Name, r.idx, r.tooLarge())
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return &core.Error{File: r.name, Problem: fmt.Sprintf("%s at byte %d", problem, r.dec.InputOffset()), Err: err}
}

func (r *geojsonReader) bound() {
	r.lr.Limit = r.lr.N + r.opts.Limits.MaxRecordBytes + decoderSlack
}

// readHeader reads the top-level object up to the start of the features
// array, or, for a Feature or a bare geometry, all of it.
func (r *geojsonReader) readHeader() error {
	tok, err := r.dec.Token()
	if err != nil {
		return r.fail("invalid json", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &core.Error{File: r.name, Problem: "not a geojson object"}
	}
	members := map[string]json.RawMessage{}
	for r.dec.More() {
		r.bound()
		tok, err := r.dec.Token()
		if err != nil {
			return r.fail("invalid json", err)
		}
		key, _ := tok.(string)
		if key == "features" {
			if t, ok := members["type"]; ok && JsonString(t) != "FeatureCollection" {
				return &core.Error{File: r.name, Problem: fmt.Sprintf("features member in a %q object", JsonString(t))}
			}
			tok, err := r.dec.Token()
			if err != nil {
				return r.fail("invalid json", err)
			}
			if d, ok := tok.(json.Delim); !ok || d != '[' {
				return r.fail("features is not an array", nil)
			}
			crs, seen := members["crs"]
			if !seen {
				if raw, ok := trailingMember(r.path, "crs", r.Tune.CrsWindow); ok {
					crs, r.assumedCRS, r.crsRaw = raw, true, raw
				} else if crs, err = scanTopLevelMember(r.path, "crs", 1<<20); err != nil {
					return &core.Error{File: r.name, Problem: "scan for crs", Err: err}
				}
			}
			r.streaming = true
			return r.setCRS(crs)
		}
		var raw json.RawMessage
		if err := r.dec.Decode(&raw); err != nil {
			return r.fail("invalid json", err)
		}
		switch key {
		case "type", "crs", "geometry", "properties", "coordinates", "geometries", "id":
			members[key] = raw
		}
	}
	if _, err := r.dec.Token(); err != nil { // '}'
		return r.fail("invalid json", err)
	}
	if err := r.expectEOF(); err != nil {
		return err
	}
	typ := JsonString(members["type"])
	switch typ {
	case "Feature":
		r.pending = &featureJSON{Type: typ, Geometry: members["geometry"], Properties: members["properties"], ID: members["id"]}
	case "Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon", "GeometryCollection":
		g := map[string]json.RawMessage{"type": members["type"]}
		for _, k := range []string{"coordinates", "geometries"} {
			if v, ok := members[k]; ok {
				g[k] = v
			}
		}
		b, err := json.Marshal(g)
		if err != nil {
			return &core.Error{File: r.name, Problem: "invalid geometry", Err: err}
		}
		r.pending = &featureJSON{Type: "Feature", Geometry: b}
	case "FeatureCollection":
		return &core.Error{File: r.name, Problem: "featurecollection has no features member"}
	default:
		return &core.Error{File: r.name, Problem: fmt.Sprintf("unsupported geojson type %q", typ)}
	}
	return r.setCRS(members["crs"])
}

func (r *geojsonReader) setCRS(raw json.RawMessage) error {
	text, err := GeojsonCRSText(raw)
	if err != nil {
		return &core.Error{File: r.name, Problem: "invalid crs", Err: err}
	}
	if text == "" && r.opts.SourceSRID == 0 {
		// RFC 7946: no crs member means longitude/latitude on WGS 84.
		r.layer.SRID = 4326
		r.layer.CRS = crs.CRS{Method: crs.Default, EPSG: 4326}
		r.lonLat = !r.opts.Preflight
		return nil
	}
	return core.SetLayerCRS(&r.layer, r.name, text, r.opts)
}

func (r *geojsonReader) expectEOF() error {
	if _, err := r.dec.Token(); err != io.EOF {
		return r.fail("trailing data after geojson object", err)
	}
	return nil
}

// JsonString returns the JSON string in raw, or "" if raw is not a string.
func JsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func (r *geojsonReader) Next() bool {
	if r.err != nil || r.done {
		return false
	}
	if r.pending != nil {
		fj := r.pending
		r.pending = nil
		r.done = true
		return r.emit(fj)
	}
	if !r.streaming {
		r.done = true
		return false
	}
	if r.pipe == nil {
		if err := r.startPipe(); err != nil {
			r.err = err
			return false
		}
	}
	for {
		f, ok, err := r.pipe.Next()
		if !ok {
			r.streaming = false
			r.done = true
			if err != nil {
				r.err = err
			}
			return false
		}
		r.idx = f.Index + 1
		if f.Skipped {
			continue // in opts.Skip: read past (decodeBatch)
		}
		r.feat = f
		return true
	}
}

// startPipe starts decoding the features array, which starts at the
// header decoder's position: the splitter reads the file from there on.
func (r *geojsonReader) startPipe() error {
	off := r.bom + r.dec.InputOffset()
	if _, err := r.f.Seek(off, io.SeekStart); err != nil {
		return &core.Error{File: r.name, Problem: "read", Err: err}
	}
	var size int64
	if fi, err := r.f.Stat(); err == nil {
		size = fi.Size() - off
	}
	s := &collSplitter{
		in:       input{rd: r.f, Buf: getBuf(r.Tune.BufSize), base: off, Size: r.Tune.BufSize},
		maxItems: r.Tune.MaxItems,
		idx:      r.idx,
		maxRec:   r.opts.Limits.MaxRecordBytes,
		errAt:    r.errAt,
		tooLarge: func(idx int64) error { return core.FeatureLimitError(r.name, r.layer.Name, idx, r.tooLarge()) },
		tail:     r.checkTail,
	}
	s.in.Limit = int(min(r.opts.Limits.MaxRecordBytes+decoderSlack+1, 1<<62))
	s.in.FileSize = off + size
	workers := r.Tune.decoders(size)
	if r.opts.RawHashOnly {
		workers = 0 // hashing is no work to hand out
	}
	r.opts.Skip.Start()
	r.pipe = newPipeline(s.split, r.decodeBatch, workers)
	return nil
}

// tooLarge is the error of a feature over Limits.MaxRecordBytes.
func (r *geojsonReader) tooLarge() *core.LimitError {
	return core.OverLimit(core.LimitFeatureBytes, r.opts.Limits.MaxRecordBytes, "more than %d bytes in one feature")
}

// errAt is the error for a problem at file offset off, in feature idx
// (-1: between features). Offsets in errors do not count a byte order
// mark, as encoding/json's did.
func (r *geojsonReader) errAt(idx, off int64, problem string, err error) error {
	if idx >= 0 {
		problem = fmt.Sprintf("feature %d: %s", idx, problem)
	}
	return &core.Error{File: r.name, Problem: fmt.Sprintf("%s at byte %d", problem, off-r.bom), Err: err}
}

// decodeBatch decodes the features of b, stopping at the first error.
func (r *geojsonReader) decodeBatch(d *fastDecoder, b *batch) {
	d.Lim = r.opts.Limits
	for j, sp := range b.spans {
		idx := b.first + int64(j)
		raw := b.buf[sp.start:sp.end]
		h := d.rawHasher(r.opts.Limits).Sum(raw) // before decoding, which may reuse raw
		if r.opts.RawHashOnly {
			b.feats = append(b.feats, core.Feature{Index: idx, Layer: r.layer.Name, RawHash: h})
			continue
		}
		if r.opts.Skip.Has(idx) {
			b.feats = append(b.feats, core.Feature{Index: idx, Layer: r.layer.Name, RawHash: h, Skipped: true})
			continue
		}
		f, err := r.decodeElement(d, raw, idx, b.base+int64(sp.start), b.base+int64(sp.end))
		if err != nil {
			b.ferr = err
			return
		}
		f.RawHash = h
		b.feats = append(b.feats, f)
	}
}

// decodeElement decodes raw, the element idx of the features array, at
// file offsets start to end: with the fast decoder, or where it declines,
// as the reference path (encoding/json into featureJSON, decodeFeature)
// does.
func (r *geojsonReader) decodeElement(d *fastDecoder, raw []byte, idx, start, end int64) (core.Feature, error) {
	var err error
	if g, props, ok := d.Feature(raw, false); d.Over != nil {
		return core.Feature{}, core.FeatureLimitError(r.name, r.layer.Name, idx, d.Over)
	} else if ok {
		var f core.Feature
		if f, err = finishFeature(g, props, idx, r.layer, r.lonLat); err == nil {
			f.DroppedZM = g != nil && d.zm
			f.ID = d.id
			return f, nil
		}
	} else {
		var fj featureJSON
		if jerr := json.Unmarshal(raw, &fj); jerr != nil {
			off := end
			var se *json.SyntaxError
			if errors.As(jerr, &se) {
				off = start
			}
			return core.Feature{}, r.errAt(idx, off, "invalid json", jerr)
		}
		var f core.Feature
		if f, err = decodeFeature(&fj, idx, r.layer, r.lonLat, r.opts.Limits.MaxVertices); err == nil {
			return f, nil
		}
	}
	if le := core.AsFeatureLimit(r.name, r.layer.Name, idx, err); le != nil {
		return core.Feature{}, le
	}
	return core.Feature{}, &core.Error{File: r.name, Problem: fmt.Sprintf("feature %d at byte %d", idx, end-r.bom), Err: err}
}

// checkTail reads what follows the features array (rest, at file offset
// off, then rd): more members and the end of the object, then nothing
// but whitespace. It decodes them with encoding/json, as a stream that
// starts with an empty features array, under the same size bound per
// member as the header.
func (r *geojsonReader) checkTail(rest []byte, off int64, rd io.Reader) error {
	const prefix = `{"features":[]`
	lr := &LimitReader{R: io.MultiReader(strings.NewReader(prefix), bytes.NewReader(rest), rd)}
	dec := json.NewDecoder(lr)
	fail := func(problem string, err error) error {
		if errors.Is(err, ErrRecordTooLarge) {
			return core.UploadLimitError(r.name, core.OverLimit(core.LimitFeatureBytes, r.opts.Limits.MaxRecordBytes, "a member of more than %d bytes after the features array"))
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return r.errAt(-1, off+dec.InputOffset()-int64(len(prefix)), problem, err)
	}
	bound := func() { lr.Limit = lr.N + r.opts.Limits.MaxRecordBytes + decoderSlack }
	bound()
	for i := 0; i < 4; i++ { // { "features" [ ]
		if _, err := dec.Token(); err != nil {
			return fail("invalid json", err)
		}
	}
	for dec.More() {
		bound()
		if _, err := dec.Token(); err != nil {
			return fail("invalid json", err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fail("invalid json", err)
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return fail("invalid json", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("trailing data after geojson object", err)
	}
	if r.assumedCRS {
		return r.checkAssumedCRS(off)
	}
	return nil
}

// checkAssumedCRS scans what follows the features array (from file
// offset off) for a crs member as scanTopLevelMember would have, and
// fails if it is not the one the features were read with.
func (r *geojsonReader) checkAssumedCRS(off int64) error {
	f, err := os.Open(r.path)
	if err != nil {
		return &core.Error{File: r.name, Problem: "scan for crs", Err: err}
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return &core.Error{File: r.name, Problem: "scan for crs", Err: err}
	}
	raw, err := scanMember(f, "crs", 1<<20, 1)
	if err != nil {
		return &core.Error{File: r.name, Problem: "scan for crs", Err: err}
	}
	if !bytes.Equal(raw, r.crsRaw) {
		return &core.Error{File: r.name, Problem: fmt.Sprintf("the crs member after the features array is followed by a member larger than %d bytes, and the features were read without it: put the crs member before the features array", r.Tune.CrsWindow)}
	}
	return nil
}

func (r *geojsonReader) emit(fj *featureJSON) bool {
	f, err := decodeFeature(fj, r.idx, r.layer, r.lonLat, r.opts.Limits.MaxVertices)
	if le := core.AsFeatureLimit(r.name, r.layer.Name, r.idx, err); le != nil {
		r.err = le
		return false
	}
	if err != nil {
		r.err = &core.Error{File: r.name, Problem: fmt.Sprintf("feature %d at byte %d", r.idx, r.dec.InputOffset()), Err: err}
		return false
	}
	r.feat = f
	r.idx++
	return true
}

// decodeFeature turns a raw Feature into a normalised Feature. It is the
// reference decoding: the fast decoder gives the same features, and falls
// back on this one for anything it does not handle. A geometry of more
// than maxVertices positions is refused with a *LimitError before it is
// decoded.
func decodeFeature(fj *featureJSON, idx int64, layer core.Layer, lonLat bool, maxVertices int64) (core.Feature, error) {
	if fj.Type != "Feature" {
		return core.Feature{}, fmt.Errorf("type %q is not Feature", fj.Type)
	}
	f := core.Feature{Index: idx, Layer: layer.Name}
	if len(fj.Geometry) > 0 && string(fj.Geometry) != "null" {
		if _, over := core.CountPositions(fj.Geometry, maxVertices); over {
			return core.Feature{}, core.OverLimit(core.LimitVertices, maxVertices, "more than %d vertices")
		}
		g, err := geojson.UnmarshalGeometry(fj.Geometry)
		if err != nil {
			return core.Feature{}, fmt.Errorf("invalid geometry: %w", err)
		}
		t, err := core.FromOrb(g.Geometry(), layer.SRID)
		if err != nil {
			return core.Feature{}, fmt.Errorf("invalid geometry: %w", err)
		}
		if err := checkGeom(t, lonLat); err != nil {
			return core.Feature{}, err
		}
		f.Geom = t
		f.DroppedZM = t != nil && core.HasAltitudes(fj.Geometry)
	}
	props, err := CompactObject(fj.Properties)
	if err != nil {
		return core.Feature{}, err
	}
	f.Properties = props
	f.ID = featureID(fj.ID)
	return f, nil
}

// checkGeom checks the coordinates of a geometry of a layer that has no
// crs member (lonLat): they must be longitude/latitude.
func checkGeom(t geom.T, lonLat bool) error {
	if lonLat {
		if err := core.CheckLonLat(t); err != nil {
			return fmt.Errorf("file has no crs member, so RFC 7946 means EPSG:4326, but %w: give a source SRID", err)
		}
	}
	return nil
}

// finishFeature completes a feature the fast decoder decoded (g nil for
// no geometry) as decodeFeature does: SRID, coordinate check.
func finishFeature(g geom.T, props []byte, idx int64, layer core.Layer, lonLat bool) (core.Feature, error) {
	f := core.Feature{Index: idx, Layer: layer.Name, Properties: props}
	if g != nil {
		g = core.SetSRID(g, layer.SRID)
		if _, coll := g.(*geom.GeometryCollection); lonLat && (coll || !lonlat.Within(g.FlatCoords(), g.Stride(), lonlat.Slack)) {
			if err := checkGeom(g, lonLat); err != nil {
				return core.Feature{}, err
			}
		}
		f.Geom = g
	}
	return f, nil
}

// CompactObject returns raw compacted, "{}" for a missing or null value,
// and an error if raw is not a JSON object.
func CompactObject(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}"), nil
	}
	if raw[0] != '{' {
		return nil, errors.New("properties is not an object")
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("invalid properties: %w", err)
	}
	return buf.Bytes(), nil
}

func (r *geojsonReader) NextIndex() int64 { return r.idx }

func (r *geojsonReader) Feature() core.Feature { return r.feat }
func (r *geojsonReader) Layer() core.Layer     { return r.layer }
func (r *geojsonReader) Err() error            { return r.err }

func (r *geojsonReader) Close() error {
	r.done = true
	if r.pipe != nil {
		r.pipe.close()
	}
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// scanTopLevelMember finds the member named key of the top-level JSON object
// in the file at path and returns its raw value (nil if there is none). It
// streams the file byte by byte without decoding values, so it is cheap
// enough to run before streaming a large FeatureCollection whose crs member
// comes after its features. Values longer than max bytes are refused.
func scanTopLevelMember(path, key string, max int) (json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return scanMember(f, key, max, 0)
}

// scanMember is scanTopLevelMember on what f holds, from a point where the
// depth is depth (1: in the top-level object, after a member's value).
func scanMember(f io.Reader, key string, max, depth int) (json.RawMessage, error) {
	var (
		buf               = make([]byte, 1<<16)
		inStr, esc        bool
		expectKey, inKey  bool
		isWant, capturing bool
		keyBuf, val       []byte
	)
	for {
		n, rerr := f.Read(buf)
		for i := 0; i < n; i++ {
			if depth >= 2 && !inStr && !capturing {
				// Inside a member's value (the features array, say):
				// only strings and brackets matter until the depth is
				// back to 1.
				if i = skipDeep(buf[:n], i, &depth, &inStr, &esc); i >= n {
					break
				}
			}
			c := buf[i]
			if capturing {
				if len(val) >= max {
					return nil, fmt.Errorf("member %q exceeds %d bytes", key, max)
				}
				val = append(val, c)
			}
			if inStr {
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					inStr = false
					if inKey {
						inKey = false
						isWant = string(keyBuf) == key
					}
					continue
				}
				if inKey && len(keyBuf) < 64 {
					keyBuf = append(keyBuf, c)
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
				if depth == 1 && expectKey {
					inKey, expectKey = true, false
					keyBuf = keyBuf[:0]
				}
			case '{', '[':
				depth++
				if depth == 1 {
					expectKey = c == '{'
				}
			case '}', ']':
				depth--
				if depth == 0 && capturing {
					return bytes.TrimSpace(val[:len(val)-1]), nil
				}
			case ',':
				if depth == 1 {
					if capturing {
						return bytes.TrimSpace(val[:len(val)-1]), nil
					}
					expectKey = true
				}
			case ':':
				if depth == 1 && isWant {
					isWant, capturing = false, true
				}
			}
		}
		if rerr == io.EOF {
			return nil, nil
		}
		if rerr != nil {
			return nil, rerr
		}
	}
}

// skipDeep consumes b from i while the depth stays at 2 or more, tracking
// strings and brackets only, as scanTopLevelMember's byte-by-byte loop
// would. It returns the index of the first byte it did not consume: just
// past the bracket that brought the depth back to 1, or len(b), with
// inStr and esc set if b ends inside a string.
func skipDeep(b []byte, i int, depth *int, inStr, esc *bool) int {
	d := *depth
	defer func() { *depth = d }()
	for i < len(b) {
		switch jsonscan.StructClass[b[i]] {
		case 0:
			i = jsonscan.NextStructural(b, i+1)
		case 1:
			i++
			for {
				if i = jsonscan.NextQuoteOrBackslash(b, i); i >= len(b) {
					*inStr = true
					return i
				}
				if b[i] == '"' {
					i++
					break
				}
				if i+1 >= len(b) {
					*inStr, *esc = true, true
					return len(b)
				}
				i += 2
			}
		case 2:
			d++
			i++
		case 3:
			d--
			i++
			if d < 2 {
				return i
			}
		}
	}
	return i
}
