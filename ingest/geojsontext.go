package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// GeoJSON is a GeoJSON geometry as text (as PostGIS's ST_AsGeoJSON writes
// it), "" for none. In JSON it is the geometry object itself, not a string
// holding it, so a consumer reads change.bbox.coordinates directly; ""
// is null (or, under omitempty, left out). It reads back an object, null,
// or a string holding the geometry (the form change records had in JSON
// before it).
type GeoJSON string

// MarshalJSON writes the geometry object; the encoder checks that it is
// valid JSON.
func (g GeoJSON) MarshalJSON() ([]byte, error) {
	if g == "" {
		return []byte("null"), nil
	}
	return []byte(g), nil
}

// UnmarshalJSON reads an object, null or a string.
func (g *GeoJSON) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*g = ""
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*g = GeoJSON(s)
	case b[0] == '{':
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			return err
		}
		*g = GeoJSON(c.String())
	default:
		return fmt.Errorf("a GeoJSON geometry is an object, null or a string holding one, not %.20s", b)
	}
	return nil
}
