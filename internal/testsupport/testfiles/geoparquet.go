package testfiles

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// GeoParquetRow is one row of the GeoParquet files GeoParquet writes: a
// WKB geometry (nil for null) and typed columns, so that a test sees each
// Parquet type come out as JSON.
type GeoParquetRow struct {
	Geometry   []byte  `parquet:"geometry,optional"`
	FID        int64   `parquet:"fid"`
	Name       *string `parquet:"name,optional"`
	Score      float64 `parquet:"score"`
	Flag       bool    `parquet:"flag"`
	Day        int32   `parquet:"day,date"` // days since 1970-01-01
	Properties string  `parquet:"properties,json"`
}

// GeoParquetOptions shape the file GeoParquet writes.
type GeoParquetOptions struct {
	// CRS is the geometry column's crs member: nil leaves it out (OGC:CRS84),
	// json.RawMessage("null") makes it unknown, else PROJJSON.
	CRS json.RawMessage
	// RowGroupRows is the rows per row group (default 1000).
	RowGroupRows int64
	// Geo, when set, replaces the whole "geo" metadata.
	Geo string
	// DataPageV1 writes version 1 data pages (as pyarrow and GDAL do by
	// default) instead of parquet-go's version 2.
	DataPageV1 bool
}

// GeoParquet writes rows to path as a GeoParquet 1.1 file with a WKB
// "geometry" column, and returns path.
func GeoParquet(t testing.TB, path string, rows func(yield func(GeoParquetRow) bool), o GeoParquetOptions) string {
	t.Helper()
	geo := o.Geo
	if geo == "" {
		col := map[string]any{"encoding": "WKB", "geometry_types": []string{}}
		if o.CRS != nil {
			col["crs"] = o.CRS
		}
		b, err := json.Marshal(map[string]any{"version": "1.1.0", "primary_column": "geometry",
			"columns": map[string]any{"geometry": col}})
		require.NoError(t, err)
		geo = string(b)
	}
	if o.RowGroupRows == 0 {
		o.RowGroupRows = 1000
	}
	f, err := os.Create(path)
	require.NoError(t, err)
	wo := []parquet.WriterOption{parquet.KeyValueMetadata("geo", geo),
		parquet.MaxRowsPerRowGroup(o.RowGroupRows), parquet.Compression(&parquet.Snappy)}
	if o.DataPageV1 {
		wo = append(wo, parquet.DataPageVersion(1))
	}
	w := parquet.NewGenericWriter[GeoParquetRow](f, wo...)
	batch := make([]GeoParquetRow, 0, 256)
	flush := func() {
		_, err := w.Write(batch)
		require.NoError(t, err)
		batch = batch[:0]
	}
	for r := range rows {
		batch = append(batch, r)
		if len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	return path
}

// GeoParquetFrom writes features (geometry, coordinates as they are,
// and properties JSON, in order) to dst as GeoParquet, half of the
// single polygons as Polygon, and returns the number of features.
func GeoParquetFrom(t testing.TB, dst string, features func(yield func(g geom.T, props []byte) bool), o GeoParquetOptions) int {
	t.Helper()
	n := 0
	GeoParquet(t, dst, func(yield func(GeoParquetRow) bool) {
		for g, props := range features {
			i := int64(n)
			row := GeoParquetRow{FID: i, Score: float64(i) / 4, Flag: i%2 == 0,
				Day: int32(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()/86400 + i%365), Properties: string(props)}
			if g != nil {
				var buf bytes.Buffer
				if mp, ok := g.(*geom.MultiPolygon); ok && mp.NumPolygons() == 1 && i%2 == 1 {
					g = mp.Polygon(0) // the reader promotes it
				}
				require.NoError(t, wkb.Write(&buf, wkb.NDR, g))
				row.Geometry = buf.Bytes()
			}
			name := "feature"
			if i%3 != 0 {
				row.Name = &name
			}
			n++
			if !yield(row) {
				return
			}
		}
	}, o)
	return n
}
