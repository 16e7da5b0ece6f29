package geojson

// The GeoJSON readers as they were before the fast, parallel decoder
// (commit 2a772b0): encoding/json, orb's geojson and fromOrb, one feature
// at a time, with a byte-by-byte scan for a crs member after the
// features. The differential tests compare the readers with these, which
// are kept verbatim but for their names.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/paulmach/orb/geojson"
)

type legacyGeoJSONReader struct {
	path string // the file read
	name string // the file named in errors

	f      *os.File
	lr     *LimitReader
	dec    *json.Decoder
	opts   Options
	layer  Layer
	lonLat bool // SRID 4326 by RFC 7946 default: check coordinates

	streaming bool         // inside the features array
	pending   *featureJSON // the single Feature of a non-collection file
	done      bool

	idx int64
	// inTail: reading what follows the features array.
	inTail bool
	feat   Feature
	err    error
}

func legacyOpenGeoJSON(path string, opts Options) (*legacyGeoJSONReader, error) {
	return legacyOpenGeoJSONAs(path, path, core.LayerName(path), 0, opts)
}

// legacyOpenGeoJSONAs opens the GeoJSON file at path as the layer called layer
// whose first feature has Index base, naming it file in errors (a zip
// entry is read from a temporary copy but named archive/entry).
func legacyOpenGeoJSONAs(path, file, layer string, base int64, opts Options) (*legacyGeoJSONReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: file, Problem: "open", Err: err}
	}
	r := &legacyGeoJSONReader{path: path, name: file, f: f, opts: opts, idx: base}
	r.layer = Layer{Name: layer, Format: FormatGeoJSON}
	br := bufio.NewReaderSize(f, 1<<16)
	_ = SkipBOM(br)
	r.lr = &LimitReader{R: br, Limit: opts.Limits.MaxRecordBytes + decoderSlack}
	r.dec = json.NewDecoder(r.lr)
	if err := r.readHeader(); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func (r *legacyGeoJSONReader) fail(problem string, err error) *Error {
	if errors.Is(err, ErrRecordTooLarge) && r.inTail {
		return core.UploadLimitError(r.name, core.OverLimit(LimitFeatureBytes, r.opts.Limits.MaxRecordBytes, "a member of more than %d bytes after the features array"))
	}
	if errors.Is(err, ErrRecordTooLarge) {
		// As the new reader words it: the limit, layer and feature.
		return FeatureLimitError(r.name, r.layer.Name, r.idx, core.OverLimit(LimitFeatureBytes, r.opts.Limits.MaxRecordBytes, "more than %d bytes in one feature"))
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return &Error{File: r.name, Problem: fmt.Sprintf("%s at byte %d", problem, r.dec.InputOffset()), Err: err}
}

func (r *legacyGeoJSONReader) bound() {
	r.lr.Limit = r.lr.N + r.opts.Limits.MaxRecordBytes + decoderSlack
}

// readHeader reads the top-level object up to the start of the features
// array, or, for a Feature or a bare geometry, all of it.
func (r *legacyGeoJSONReader) readHeader() error {
	tok, err := r.dec.Token()
	if err != nil {
		return r.fail("invalid json", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &Error{File: r.name, Problem: "not a geojson object"}
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
				return &Error{File: r.name, Problem: fmt.Sprintf("features member in a %q object", JsonString(t))}
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
				if crs, err = legacyScanTopLevelMember(r.path, "crs", 1<<20); err != nil {
					return &Error{File: r.name, Problem: "scan for crs", Err: err}
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
		case "type", "crs", "geometry", "properties", "coordinates", "geometries":
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
		r.pending = &featureJSON{Type: typ, Geometry: members["geometry"], Properties: members["properties"]}
	case "Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon", "GeometryCollection":
		g := map[string]json.RawMessage{"type": members["type"]}
		for _, k := range []string{"coordinates", "geometries"} {
			if v, ok := members[k]; ok {
				g[k] = v
			}
		}
		b, err := json.Marshal(g)
		if err != nil {
			return &Error{File: r.name, Problem: "invalid geometry", Err: err}
		}
		r.pending = &featureJSON{Type: "Feature", Geometry: b}
	case "FeatureCollection":
		return &Error{File: r.name, Problem: "featurecollection has no features member"}
	default:
		return &Error{File: r.name, Problem: fmt.Sprintf("unsupported geojson type %q", typ)}
	}
	return r.setCRS(members["crs"])
}

func (r *legacyGeoJSONReader) setCRS(raw json.RawMessage) error {
	text, err := GeojsonCRSText(raw)
	if err != nil {
		return &Error{File: r.name, Problem: "invalid crs", Err: err}
	}
	if text == "" && r.opts.SourceSRID == 0 {
		// RFC 7946: no crs member means longitude/latitude on WGS 84.
		r.layer.SRID = 4326
		r.layer.CRS = crs.CRS{Method: crs.Default, EPSG: 4326}
		r.lonLat = true
		return nil
	}
	return core.SetLayerCRS(&r.layer, r.name, text, r.opts)
}

func (r *legacyGeoJSONReader) expectEOF() error {
	if _, err := r.dec.Token(); err != io.EOF {
		return r.fail("trailing data after geojson object", err)
	}
	return nil
}

func (r *legacyGeoJSONReader) Next() bool {
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
	if !r.dec.More() {
		r.streaming = false
		r.done = true
		if err := r.finish(); err != nil {
			r.err = err
		}
		return false
	}
	r.bound()
	var fj featureJSON
	if err := r.dec.Decode(&fj); err != nil {
		r.err = r.fail(fmt.Sprintf("feature %d: invalid json", r.idx), err)
		return false
	}
	return r.emit(&fj)
}

// finish reads what follows the features array: more members and the end
// of the object.
func (r *legacyGeoJSONReader) finish() error {
	r.inTail = true
	if _, err := r.dec.Token(); err != nil { // ']'
		return r.fail("invalid json", err)
	}
	for r.dec.More() {
		r.bound()
		if _, err := r.dec.Token(); err != nil {
			return r.fail("invalid json", err)
		}
		var raw json.RawMessage
		if err := r.dec.Decode(&raw); err != nil {
			return r.fail("invalid json", err)
		}
	}
	if _, err := r.dec.Token(); err != nil { // '}'
		return r.fail("invalid json", err)
	}
	return r.expectEOF()
}

func (r *legacyGeoJSONReader) emit(fj *featureJSON) bool {
	f, err := legacyDecodeFeature(fj, r.idx, r.layer, r.lonLat)
	if err != nil {
		r.err = &Error{File: r.name, Problem: fmt.Sprintf("feature %d at byte %d", r.idx, r.dec.InputOffset()), Err: err}
		return false
	}
	r.feat = f
	r.idx++
	return true
}

// legacyDecodeFeature turns a raw Feature into a normalised Feature.
func legacyDecodeFeature(fj *featureJSON, idx int64, layer Layer, lonLat bool) (Feature, error) {
	if fj.Type != "Feature" {
		return Feature{}, fmt.Errorf("type %q is not Feature", fj.Type)
	}
	f := Feature{Index: idx, Layer: layer.Name}
	if len(fj.Geometry) > 0 && string(fj.Geometry) != "null" {
		g, err := geojson.UnmarshalGeometry(fj.Geometry)
		if err != nil {
			return Feature{}, fmt.Errorf("invalid geometry: %w", err)
		}
		t, err := core.FromOrb(g.Geometry(), layer.SRID)
		if err != nil {
			return Feature{}, fmt.Errorf("invalid geometry: %w", err)
		}
		if lonLat {
			if err := core.CheckLonLat(t); err != nil {
				return Feature{}, fmt.Errorf("file has no crs member, so RFC 7946 means EPSG:4326, but %w: give a source SRID", err)
			}
		}
		f.Geom = t
	}
	props, err := CompactObject(fj.Properties)
	if err != nil {
		return Feature{}, err
	}
	f.Properties = props
	return f, nil
}

func (r *legacyGeoJSONReader) NextIndex() int64 { return r.idx }

func (r *legacyGeoJSONReader) Feature() Feature { return r.feat }
func (r *legacyGeoJSONReader) Layer() Layer     { return r.layer }
func (r *legacyGeoJSONReader) Err() error       { return r.err }

func (r *legacyGeoJSONReader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// legacyScanTopLevelMember finds the member named key of the top-level JSON object
// in the file at path and returns its raw value (nil if there is none). It
// streams the file byte by byte without decoding values, so it is cheap
// enough to run before streaming a large FeatureCollection whose crs member
// comes after its features. Values longer than max bytes are refused.
func legacyScanTopLevelMember(path, key string, max int) (json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		buf               = make([]byte, 1<<16)
		depth             int
		inStr, esc        bool
		expectKey, inKey  bool
		isWant, capturing bool
		keyBuf, val       []byte
	)
	for {
		n, rerr := f.Read(buf)
		for _, c := range buf[:n] {
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

// legacySeqReader reads a GeoJSON text sequence: one Feature (or bare geometry)
// per line (newline-delimited GeoJSON) or per RFC 8142 record (each record
// starts with the RS byte 0x1E). Blank records are skipped. There is no crs
// member: the CRS is EPSG:4326 (RFC 7946) unless Options.SourceSRID is set.
type legacySeqReader struct {
	path   string
	f      *os.File
	br     *bufio.Reader
	opts   Options
	layer  Layer
	lonLat bool

	offset int64 // byte offset of the next record
	rec    []byte
	idx    int64
	feat   Feature
	err    error
	done   bool
}

func legacyOpenGeoJSONSeq(path string, opts Options) (*legacySeqReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Problem: "open", Err: err}
	}
	r := &legacySeqReader{path: path, f: f, br: bufio.NewReaderSize(f, 1<<16), opts: opts}
	r.layer = Layer{Name: core.LayerName(path), Format: FormatGeoJSONSeq, SRID: 4326,
		CRS: crs.CRS{Method: crs.Default, EPSG: 4326}}
	r.lonLat = true
	if opts.SourceSRID != 0 {
		r.layer.SRID, r.lonLat = opts.SourceSRID, false
		r.layer.CRS = crs.CRS{Method: crs.Override, EPSG: opts.SourceSRID}
	}
	if b, err := r.br.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		r.br.Discard(3)
		r.offset = 3
	}
	return r, nil
}

// readRecord reads up to the next newline or RS byte, refusing records
// longer than MaxRecordBytes. It returns io.EOF at the end.
func (r *legacySeqReader) readRecord() ([]byte, int64, error) {
	r.rec = r.rec[:0]
	start := r.offset
	for {
		b, err := r.br.ReadByte()
		if err == io.EOF {
			if len(r.rec) == 0 {
				return nil, start, io.EOF
			}
			return r.rec, start, nil
		}
		if err != nil {
			return nil, start, err
		}
		r.offset++
		if b == '\n' || b == 0x1E {
			if len(bytes.TrimSpace(r.rec)) == 0 {
				r.rec = r.rec[:0]
				start = r.offset
				continue
			}
			return r.rec, start, nil
		}
		if int64(len(r.rec)) >= r.opts.Limits.MaxRecordBytes {
			return nil, start, ErrRecordTooLarge
		}
		r.rec = append(r.rec, b)
	}
}

func (r *legacySeqReader) Next() bool {
	if r.err != nil || r.done {
		return false
	}
	rec, off, err := r.readRecord()
	if err == io.EOF {
		r.done = true
		return false
	}
	if errors.Is(err, ErrRecordTooLarge) {
		r.err = FeatureLimitError(r.path, r.layer.Name, r.idx, core.OverLimit(LimitFeatureBytes, r.opts.Limits.MaxRecordBytes, "more than %d bytes in one feature"))
		return false
	}
	if err != nil {
		r.err = &Error{File: r.path, Problem: fmt.Sprintf("feature %d at byte %d", r.idx, off), Err: err}
		return false
	}
	f, err := legacyDecodeSeqRecord(rec, r.idx, r.layer, r.lonLat)
	if err != nil {
		r.err = &Error{File: r.path, Problem: fmt.Sprintf("feature %d at byte %d", r.idx, off), Err: err}
		return false
	}
	r.feat = f
	r.idx++
	return true
}

// legacyDecodeSeqRecord decodes one record of a sequence: a Feature, or a bare
// geometry taken as a Feature without properties.
func legacyDecodeSeqRecord(rec []byte, idx int64, layer Layer, lonLat bool) (Feature, error) {
	var fj struct {
		featureJSON
		Coordinates json.RawMessage `json:"coordinates"`
		Geometries  json.RawMessage `json:"geometries"`
	}
	if err := json.Unmarshal(rec, &fj); err != nil {
		return Feature{}, fmt.Errorf("invalid json: %w", err)
	}
	switch fj.Type {
	case "Feature":
	case "Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon", "GeometryCollection":
		fj.featureJSON = featureJSON{Type: "Feature", Geometry: rec}
	default:
		return Feature{}, fmt.Errorf("unsupported record type %q", fj.Type)
	}
	return legacyDecodeFeature(&fj.featureJSON, idx, layer, lonLat)
}

func (r *legacySeqReader) Feature() Feature { return r.feat }
func (r *legacySeqReader) Layer() Layer     { return r.layer }
func (r *legacySeqReader) Err() error       { return r.err }

func (r *legacySeqReader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
