// Package geomio reads vector uploads (GeoJSON, GeoJSON sequences, shapefiles,
// zipped shapefiles, GeoParquet) as pull iterators of features.
//
// Readers never touch the database. They stream: a reader holds a bounded
// number of features in memory (one, or for GeoJSON the few batches its
// decoder goroutines work ahead on), whatever the file's size.
// They yield geometry as go-geom values, already normalised for a 2D
// MultiPolygon target where that can be done without a CRS library:
// Polygon is promoted to MultiPolygon and Z/M are dropped. Reprojection and
// repair of invalid polygons are left to PostGIS (ST_Transform, ST_MakeValid),
// which the write gate applies inside its transaction.
package geomio

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/geoingest/geoingest/geomio/geojson"
	"github.com/geoingest/geoingest/geomio/geoparquet"
	geogeoparquet "github.com/geoingest/geoingest/geomio/geoparquet"
	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/kml"
	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/geoingest/geoingest/geomio/shapefile"
	"github.com/geoingest/geoingest/geomio/zip"
)

// Open opens the file at path and returns a Reader over its features. The
// format is chosen by content and extension:
//
//   - a zip (by magic bytes, whatever the extension) is read as the
//     shapefile sets it holds, one stream over all of them;
//   - a .shp (or a file with the shapefile magic number) is read with the
//     .dbf, .prj and .cpg found beside it (case-insensitively);
//   - a .kml is read by geoingest's own KML reader (geomio/kml);
//   - GeoPackage, FlatGeobuf, GML (.gml, .xml, gzipped), MapInfo
//     (.tab with its .dat, .map and .id; .mif with its .mid), CSV with a
//     WKT column, and a File Geodatabase folder (.gdb) are read with GDAL
//     (geomio/ogr); a KMZ, or a zip that holds a .gdb folder or such
//     files, as a zip;
//   - JSON text in a .geojsonl, .geojsons or .ndjson file, or text that
//     starts with the RFC 8142 record separator, is a GeoJSON sequence;
//   - a Parquet file (magic "PAR1", or a .parquet or .geoparquet file) is
//     read as GeoParquet;
//   - other JSON text (.geojson, .json, ...) is a GeoJSON FeatureCollection,
//     Feature or bare geometry.
//
// Anything else fails with an *Error whose Problem is "unsupported
// format". Problems with the input are returned as *Error. Errors from
// opts.ResolveCRS are returned wrapped but not as *Error, since a failing
// resolver is not the input's fault. The caller must Close the Reader.
func Open(path string, opts core.Options) (core.Reader, error) {
	opts.Limits = opts.Limits.WithDefaults()
	opts = core.WithCRSCache(opts) // the layers' CRSs resolved once each
	if core.ReadDeadlineOf(opts).IsZero() {
		opts = core.WithReadDeadline(opts, time.Now().Add(opts.Limits.ReadTimeout))
	}
	r, err := open(path, opts)
	if err != nil {
		return nil, err
	}
	return core.WithLimits(r, path, opts.Limits), nil
}

// open is Open without the limits every feature is checked against.
func open(path string, opts core.Options) (core.Reader, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &core.Error{File: path, Problem: "open", Err: err}
	}
	if fi.IsDir() && strings.EqualFold(filepath.Ext(path), ".gdb") {
		return ogr.OpenReader(path, path, ogr.FileGDB, opts, 0)
	}
	if !fi.Mode().IsRegular() {
		return nil, &core.Error{File: path, Problem: "not a regular file"}
	}
	head, err := readHead(path, 512)
	if err != nil {
		return nil, &core.Error{File: path, Problem: "read", Err: err}
	}
	ext := strings.ToLower(filepath.Ext(path))
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")) || bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return zip.Open(path, opts)
	case ext == ".shp" || bytes.HasPrefix(head, []byte{0x00, 0x00, 0x27, 0x0a}):
		return shapefile.Open(path, filepath.Base(path), opts)
	case ext == ".zip" || ext == ".kmz":
		return nil, &core.Error{File: path, Problem: "invalid zip: bad magic bytes"}
	case bytes.HasPrefix(head, []byte(geoparquet.Magic)) || ext == ".parquet" || ext == ".geoparquet":
		return geogeoparquet.OpenReader(path, opts)
	}
	if ext == ".kml" {
		return kml.Open(path, path, kml.Base(path), opts, 0, nil)
	}
	if f, ok := ogr.FormatOf(path, head); ok {
		return ogr.OpenReader(path, path, f, opts, 0)
	}
	text := bytes.TrimLeft(bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF}), " \t\r\n")
	if len(text) == 0 {
		return nil, &core.Error{File: path, Problem: "unsupported format: empty or blank file"}
	}
	switch {
	case text[0] == 0x1E:
		return geojson.OpenSeq(path, opts)
	case text[0] == '{' && (ext == ".geojsonl" || ext == ".geojsons" || ext == ".ndjson" || ext == ".geojsonseq" || ext == ".jsonl"):
		return geojson.OpenSeq(path, opts)
	case text[0] == '{':
		return geojson.Open(path, opts)
	}
	return nil, &core.Error{File: path, Problem: fmt.Sprintf("unsupported format (extension %q)", ext)}
}

func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	m, err := io.ReadFull(f, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:m], err
}
