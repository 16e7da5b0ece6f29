package geomio

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/geoparquet"
)

// parquetReader reads a GeoParquet file (package geoparquet) as one
// layer: its primary geometry column, WKB decoded by ParseWKB, the other
// columns as properties.
type parquetReader struct {
	name   string
	file   *os.File
	gp     *geoparquet.File
	layer  Layer
	lonLat bool // CRS84 by default: check coordinates
	limits Limits
	idx    int64
	feat   Feature
	err    error
}

// openGeoParquet opens a GeoParquet file. Its CRS is the primary geometry
// column's: PROJJSON resolved with PROJ, OGC:CRS84 when the column has no
// crs member (as GeoParquet specifies), and unknown (SRID 0, refused
// unless a source SRID is given) when the crs member is null.
func openGeoParquet(path string, opts Options) (_ Reader, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Problem: "open", Err: err}
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{File: path, Problem: "stat", Err: err}
	}
	gp, err := geoparquet.Open(f, fi.Size(), opts.Limits.MaxCompressionRatio, opts.GeometryField)
	if err != nil {
		var re *geoparquet.RatioError
		if errors.As(err, &re) {
			return nil, uploadLimitError(path, overLimit(LimitZipRatio, re.Max, strings.ReplaceAll(re.Error(), "%", "%%")+" (over %d)"))
		}
		var ce *geoparquet.ColumnError
		if errors.As(err, &ce) {
			base := filepath.Base(path)
			return nil, &Error{File: path, Problem: fmt.Sprintf("layer %q", strings.TrimSuffix(base, filepath.Ext(base))), Err: err}
		}
		return nil, &Error{File: path, Problem: "invalid GeoParquet", Err: err}
	}
	r := &parquetReader{name: path, file: f, gp: gp, limits: opts.Limits}
	base := filepath.Base(path)
	r.layer = Layer{Name: strings.TrimSuffix(base, filepath.Ext(base)), Format: FormatGeoParquet, Encoding: "UTF-8"}
	if len(gp.Metadata().Columns) > 1 {
		r.layer.GeometryField = gp.Column()
	}
	col := gp.Primary()
	switch {
	case col.CRSAbsent() && opts.SourceSRID == 0:
		r.layer.SRID = 4326
		r.layer.CRS = crs.CRS{Method: crs.Default, EPSG: 4326, Name: "OGC:CRS84"}
		r.lonLat = true
	case col.CRSNull():
		if err := setLayerCRS(&r.layer, path, "", opts); err != nil {
			return nil, err
		}
	default:
		text := string(col.CRS)
		var name string
		if json.Unmarshal(col.CRS, &name) == nil {
			text = name // not PROJJSON but a name ("EPSG:2154"), as some writers put
		}
		if err := setLayerCRS(&r.layer, path, text, opts); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *parquetReader) Next() bool {
	if r.err != nil {
		return false
	}
	if !r.gp.Next() {
		if err := r.gp.Err(); err != nil {
			r.err = &Error{File: r.name, Problem: "invalid GeoParquet", Err: err}
		}
		return false
	}
	f := Feature{Index: r.idx, Layer: r.layer.Name, Properties: r.gp.Properties()}
	if w := r.gp.WKB(); w != nil {
		if int64(len(w)) > r.limits.MaxRecordBytes {
			r.err = FeatureLimitError(r.name, r.layer.Name, r.idx, overLimit(LimitFeatureBytes, r.limits.MaxRecordBytes, "a geometry of more than %d bytes"))
			return false
		}
		g, err := ParseWKB(w)
		f.DroppedZM = g != nil && wkbHasZM(w)
		if err == nil && g != nil {
			g = setSRID(g, r.layer.SRID)
			if r.lonLat {
				if lerr := checkLonLat(g); lerr != nil {
					err = fmt.Errorf("the geometry column has no crs, which GeoParquet defines as OGC:CRS84 (longitude, latitude), but %w: give a source SRID", lerr)
				}
			}
		}
		if err != nil {
			r.err = &Error{File: r.name, Problem: fmt.Sprintf("feature %d: invalid geometry", r.idx), Err: err}
			return false
		}
		f.Geom = g
	}
	r.feat = f
	r.idx++
	return true
}

func (r *parquetReader) Feature() Feature { return r.feat }
func (r *parquetReader) Layer() Layer     { return r.layer }
func (r *parquetReader) Err() error       { return r.err }

func (r *parquetReader) Close() error {
	r.gp.Close()
	return r.file.Close()
}
