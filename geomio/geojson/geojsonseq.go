package geojson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/internal/core"
)

// seqReader reads a GeoJSON text sequence: one Feature (or bare geometry)
// per line (newline-delimited GeoJSON) or per RFC 8142 record (each record
// starts with the RS byte 0x1E). Blank records are skipped. There is no crs
// member: the CRS is EPSG:4326 (RFC 7946) unless Options.SourceSRID is set.
type seqReader struct {
	path   string
	f      *os.File
	opts   core.Options
	layer  core.Layer
	lonLat bool

	offset int64 // byte offset of the first record (past a byte order mark)
	idx    int64
	feat   core.Feature
	err    error
	done   bool
	pipe   *pipeline // splits the records and decodes them
	Tune   tuning
}

func OpenSeq(path string, opts core.Options) (*seqReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &core.Error{File: path, Problem: "open", Err: err}
	}
	r := &seqReader{path: path, f: f, opts: opts, Tune: defaultTuning}
	r.layer = core.Layer{Name: core.LayerName(path), Format: core.FormatGeoJSONSeq, SRID: 4326,
		CRS: crs.CRS{Method: crs.Default, EPSG: 4326}}
	r.lonLat = !opts.Preflight
	if opts.SourceSRID != 0 {
		r.layer.SRID, r.lonLat = opts.SourceSRID, false
		r.layer.CRS = crs.CRS{Method: crs.Override, EPSG: opts.SourceSRID}
	}
	var head [3]byte
	if n, _ := io.ReadFull(f, head[:]); n == 3 && bytes.Equal(head[:], []byte{0xEF, 0xBB, 0xBF}) {
		r.offset = 3
	}
	if _, err := f.Seek(r.offset, io.SeekStart); err != nil {
		f.Close()
		return nil, &core.Error{File: path, Problem: "read", Err: err}
	}
	return r, nil
}

func (r *seqReader) Next() bool {
	if r.err != nil || r.done {
		return false
	}
	if r.pipe == nil {
		r.startPipe()
	}
	for {
		f, ok, err := r.pipe.Next()
		if !ok {
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

// startPipe starts splitting the file into records (from offset, past a
// byte order mark) and decoding them.
func (r *seqReader) startPipe() {
	var size int64
	if fi, err := r.f.Stat(); err == nil {
		size = fi.Size() - r.offset
	}
	s := &seqSplitter{
		in:       input{rd: r.f, Buf: getBuf(r.Tune.BufSize), base: r.offset, Size: r.Tune.BufSize},
		maxItems: r.Tune.MaxItems,
		idx:      r.idx,
		maxRec:   r.opts.Limits.MaxRecordBytes,
		errAt:    r.errAt,
		tooLarge: func(idx int64) error {
			return core.FeatureLimitError(r.path, r.layer.Name, idx, core.OverLimit(core.LimitFeatureBytes, r.opts.Limits.MaxRecordBytes, "more than %d bytes in one feature"))
		},
	}
	s.in.Limit = int(min(r.opts.Limits.MaxRecordBytes+1, 1<<62))
	s.in.FileSize = r.offset + size
	workers := r.Tune.decoders(size)
	if r.opts.RawHashOnly {
		workers = 0 // hashing is no work to hand out
	}
	r.opts.Skip.Start()
	r.pipe = newPipeline(s.split, r.decodeBatch, workers)
}

// errAt is the error for feature idx, whose record starts at file
// offset off.
func (r *seqReader) errAt(idx, off int64, err error) error {
	return &core.Error{File: r.path, Problem: fmt.Sprintf("feature %d at byte %d", idx, off), Err: err}
}

// decodeBatch decodes the records of b, stopping at the first error:
// with the fast decoder, or where it declines, with decodeSeqRecord.
func (r *seqReader) decodeBatch(d *fastDecoder, b *batch) {
	d.Lim = r.opts.Limits
	for j, sp := range b.spans {
		idx := b.first + int64(j)
		rec := b.buf[sp.start:sp.end]
		h := d.rawHasher(r.opts.Limits).Sum(rec) // before decoding, which may reuse rec
		if r.opts.RawHashOnly {
			b.feats = append(b.feats, core.Feature{Index: idx, Layer: r.layer.Name, RawHash: h})
			continue
		}
		if r.opts.Skip.Has(idx) {
			b.feats = append(b.feats, core.Feature{Index: idx, Layer: r.layer.Name, RawHash: h, Skipped: true})
			continue
		}
		var f core.Feature
		var err error
		if g, props, ok := d.Feature(rec, true); d.Over != nil {
			err = d.Over
		} else if ok {
			f, err = finishFeature(g, props, idx, r.layer, r.lonLat)
			f.DroppedZM = g != nil && d.zm
			f.ID = d.id
		} else {
			f, err = decodeSeqRecord(rec, idx, r.layer, r.lonLat, r.opts.Limits.MaxVertices)
		}
		if le := core.AsFeatureLimit(r.path, r.layer.Name, idx, err); le != nil {
			b.ferr = le
			return
		}
		if err != nil {
			b.ferr = r.errAt(idx, b.base+int64(sp.start), err)
			return
		}
		f.RawHash = h
		b.feats = append(b.feats, f)
	}
}

// decodeSeqRecord decodes one record of a sequence: a Feature, or a bare
// geometry taken as a Feature without properties.
func decodeSeqRecord(rec []byte, idx int64, layer core.Layer, lonLat bool, maxVertices int64) (core.Feature, error) {
	var fj struct {
		featureJSON
		Coordinates json.RawMessage `json:"coordinates"`
		Geometries  json.RawMessage `json:"geometries"`
	}
	if err := json.Unmarshal(rec, &fj); err != nil {
		return core.Feature{}, fmt.Errorf("invalid json: %w", err)
	}
	switch fj.Type {
	case "Feature":
	case "Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon", "GeometryCollection":
		fj.featureJSON = featureJSON{Type: "Feature", Geometry: rec}
	default:
		return core.Feature{}, fmt.Errorf("unsupported record type %q", fj.Type)
	}
	return decodeFeature(&fj.featureJSON, idx, layer, lonLat, maxVertices)
}

func (r *seqReader) Feature() core.Feature { return r.feat }
func (r *seqReader) Layer() core.Layer     { return r.layer }
func (r *seqReader) Err() error            { return r.err }

func (r *seqReader) Close() error {
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
