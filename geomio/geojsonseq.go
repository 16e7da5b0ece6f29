package geomio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/geoingest/geoingest/geomio/crs"
	"io"
	"os"
)

// seqReader reads a GeoJSON text sequence: one Feature (or bare geometry)
// per line (newline-delimited GeoJSON) or per RFC 8142 record (each record
// starts with the RS byte 0x1E). Blank records are skipped. There is no crs
// member: the CRS is EPSG:4326 (RFC 7946) unless Options.SourceSRID is set.
type seqReader struct {
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

func openGeoJSONSeq(path string, opts Options) (*seqReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Problem: "open", Err: err}
	}
	r := &seqReader{path: path, f: f, br: bufio.NewReaderSize(f, 1<<16), opts: opts}
	r.layer = Layer{Name: layerName(path), Format: FormatGeoJSONSeq, SRID: 4326,
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
func (r *seqReader) readRecord() ([]byte, int64, error) {
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
			return nil, start, fmt.Errorf("record exceeds %d bytes", r.opts.Limits.MaxRecordBytes)
		}
		r.rec = append(r.rec, b)
	}
}

func (r *seqReader) Next() bool {
	if r.err != nil || r.done {
		return false
	}
	rec, off, err := r.readRecord()
	if err == io.EOF {
		r.done = true
		return false
	}
	if err != nil {
		r.err = &Error{File: r.path, Problem: fmt.Sprintf("feature %d at byte %d", r.idx, off), Err: err}
		return false
	}
	f, err := decodeSeqRecord(rec, r.idx, r.layer, r.lonLat)
	if err != nil {
		r.err = &Error{File: r.path, Problem: fmt.Sprintf("feature %d at byte %d", r.idx, off), Err: err}
		return false
	}
	r.feat = f
	r.idx++
	return true
}

// decodeSeqRecord decodes one record of a sequence: a Feature, or a bare
// geometry taken as a Feature without properties.
func decodeSeqRecord(rec []byte, idx int64, layer Layer, lonLat bool) (Feature, error) {
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
	return decodeFeature(&fj.featureJSON, idx, layer, lonLat)
}

func (r *seqReader) Feature() Feature { return r.feat }
func (r *seqReader) Layer() Layer     { return r.layer }
func (r *seqReader) Err() error       { return r.err }

func (r *seqReader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
