package geoparquet

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// nativeGeo makes the `geo` metadata of a Parquet file that has none but
// whose columns carry Parquet's own GEOMETRY or GEOGRAPHY logical type
// (Parquet 2.11, written by recent Arrow and DuckDB): every such top-level
// column is a WKB geometry column, the first one primary, with its CRS
// from the type. ok is false when the file has no such column.
func nativeGeo(pf *parquet.File) (raw string, ok bool, err error) {
	primary := ""
	columns := map[string]map[string]any{}
	for _, f := range pf.Schema().Fields() {
		if !f.Leaf() {
			continue
		}
		lt := f.Type().LogicalType()
		if lt == nil {
			continue
		}
		var crs string
		switch t := lt.Value.(type) {
		case *format.GeometryType:
			crs = t.CRS
		case *format.GeographyType:
			crs = t.CRS
		default:
			continue
		}
		col := map[string]any{"encoding": "WKB"}
		c, err := nativeCRS(pf, crs)
		if err != nil {
			return "", false, fmt.Errorf("column %q: %w", f.Name(), err)
		}
		if c != nil {
			col["crs"] = c // absent: OGC:CRS84
		}
		columns[f.Name()] = col
		if primary == "" {
			primary = f.Name()
		}
	}
	if primary == "" {
		return "", false, nil
	}
	b, err := json.Marshal(map[string]any{"version": "native", "primary_column": primary, "columns": columns})
	return string(b), true, err
}

// nativeCRS is the `geo` crs member of a logical type's CRS: nil (absent:
// OGC:CRS84) for the default, the PROJJSON of the file metadata key that
// "projjson:KEY" names, "EPSG:N" for "srid:N", and any other identifier
// ("EPSG:27700") as it is, for PROJ to read.
func nativeCRS(pf *parquet.File, crs string) (json.RawMessage, error) {
	switch {
	case crs == "" || strings.EqualFold(crs, format.GeometryDefaultCRS):
		return nil, nil
	case strings.HasPrefix(crs, "projjson:"):
		key := strings.TrimPrefix(crs, "projjson:")
		v, ok := pf.Lookup(key)
		if !ok || !json.Valid([]byte(v)) {
			return nil, fmt.Errorf("its CRS %q names no PROJJSON in the file's metadata", crs)
		}
		return json.RawMessage(v), nil
	case strings.HasPrefix(crs, "srid:"):
		crs = "EPSG:" + strings.TrimPrefix(crs, "srid:")
	case strings.HasPrefix(strings.TrimSpace(crs), "{") && json.Valid([]byte(crs)):
		return json.RawMessage(crs), nil // PROJJSON inline
	}
	return json.Marshal(crs)
}
