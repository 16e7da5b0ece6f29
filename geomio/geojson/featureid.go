package geojson

import "github.com/geoingest/geoingest/geomio/jsonscan"

// featureID is a GeoJSON Feature's "id" member as Feature.ID keeps it: a
// JSON string or number, copied; nil for null, a missing member or any
// other JSON type (RFC 7946 allows only a string or a number).
func featureID(raw []byte) []byte {
	i, j := 0, len(raw)
	for i < j && jsonscan.IsSpace(raw[i]) {
		i++
	}
	for j > i && jsonscan.IsSpace(raw[j-1]) {
		j--
	}
	if i == j {
		return nil
	}
	switch c := raw[i]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return append([]byte(nil), raw[i:j]...)
	}
	return nil
}
