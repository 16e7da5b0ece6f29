package geoparquet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/geomio/internal/core"
)

// parquetReader reads a GeoParquet file (package geoparquet) as one
// layer: its primary geometry column, WKB decoded by ParseWKB, the other
// columns as properties.
type parquetReader struct {
	name   string
	file   *os.File
	gp     *File
	layer  core.Layer
	lonLat bool // CRS84 by default: check coordinates
	limits core.Limits
	idx    int64
	feat   core.Feature
	err    error
}

// OpenReader opens a GeoParquet file. Its CRS is the primary geometry
// column's: PROJJSON resolved with PROJ, OGC:CRS84 when the column has no
// crs member (as GeoParquet specifies), and unknown (SRID 0, refused
// unless a source SRID is given) when the crs member is null.
func OpenReader(path string, opts core.Options) (_ core.Reader, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &core.Error{File: path, Problem: "open", Err: err}
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, &core.Error{File: path, Problem: "stat", Err: err}
	}
	gp, err := Open(f, fi.Size(), opts.Limits.MaxCompressionRatio, opts.GeometryField)
	if err != nil {
		var re *RatioError
		if errors.As(err, &re) {
			return nil, core.UploadLimitError(path, core.OverLimit(core.LimitZipRatio, re.Max, strings.ReplaceAll(re.Error(), "%", "%%")+" (over %d)"))
		}
		var ce *ColumnError
		if errors.As(err, &ce) {
			base := filepath.Base(path)
			return nil, &core.Error{File: path, Problem: fmt.Sprintf("layer %q", strings.TrimSuffix(base, filepath.Ext(base))), Err: err}
		}
		return nil, &core.Error{File: path, Problem: "invalid GeoParquet", Err: err}
	}
	r := &parquetReader{name: path, file: f, gp: gp, limits: opts.Limits}
	base := filepath.Base(path)
	r.layer = core.Layer{Name: strings.TrimSuffix(base, filepath.Ext(base)), Format: core.FormatGeoParquet, Encoding: "UTF-8"}
	if len(gp.Metadata().Columns) > 1 {
		r.layer.GeometryField = gp.Column()
	}
	col := gp.Primary()
	switch {
	case col.CRSAbsent() && opts.SourceSRID == 0:
		r.layer.SRID = 4326
		r.layer.CRS = crs.CRS{Method: crs.Default, EPSG: 4326, Name: "OGC:CRS84"}
		r.lonLat = !opts.Preflight
	case col.CRSNull():
		if err := core.SetLayerCRS(&r.layer, path, "", opts); err != nil {
			return nil, err
		}
	default:
		text := string(col.CRS)
		var name string
		if json.Unmarshal(col.CRS, &name) == nil {
			text = name // not PROJJSON but a name ("EPSG:2154"), as some writers put
		}
		if err := core.SetLayerCRS(&r.layer, path, text, opts); err != nil {
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
			r.err = &core.Error{File: r.name, Problem: "invalid GeoParquet", Err: err}
		}
		return false
	}
	f := core.Feature{Index: r.idx, Layer: r.layer.Name, Properties: r.gp.Properties()}
	if w := r.gp.WKB(); w != nil {
		if int64(len(w)) > r.limits.MaxRecordBytes {
			r.err = core.FeatureLimitError(r.name, r.layer.Name, r.idx, core.OverLimit(core.LimitFeatureBytes, r.limits.MaxRecordBytes, "a geometry of more than %d bytes"))
			return false
		}
		g, err := core.ParseWKB(w)
		f.DroppedZM = g != nil && core.WkbHasZM(w)
		if err == nil && g != nil {
			g = core.SetSRID(g, r.layer.SRID)
			if r.lonLat {
				if lerr := core.CheckLonLat(g); lerr != nil {
					err = fmt.Errorf("the geometry column has no crs, which GeoParquet defines as OGC:CRS84 (longitude, latitude), but %w: give a source SRID", lerr)
				}
			}
		}
		if err != nil {
			r.err = &core.Error{File: r.name, Problem: fmt.Sprintf("feature %d: invalid geometry", r.idx), Err: err}
			return false
		}
		f.Geom = g
	}
	r.feat = f
	r.idx++
	return true
}

func (r *parquetReader) Feature() core.Feature { return r.feat }
func (r *parquetReader) Layer() core.Layer     { return r.layer }
func (r *parquetReader) Err() error            { return r.err }

func (r *parquetReader) Close() error {
	r.gp.Close()
	return r.file.Close()
}
