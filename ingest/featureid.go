package ingest

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/geoingest/geoingest/geomio"
)

// FeatureIDKey is the key field that names a GeoJSON Feature's "id"
// member (route option key=@id, --key @id; in a composite key such as
// key=STATE|@id too). The member is not a property, so a job whose key
// names it keeps it as one: each feature that has an id member and no
// property "@id" gets the property "@id" with the member's value, before
// anything else sees the feature. The key, the guards, the checksum and
// the change record then treat it as any property, and the next version,
// read the same way, matches by it. A property "@id" already in the file
// (Overpass exports write one) is kept as it is. A feature without an id
// member (and every feature of a format that has none) has no key, and is
// matched by the rules after the key.
const FeatureIDKey = "@id"

// namesFeatureID reports whether the job's key names the Feature id.
func namesFeatureID(p Params) bool { return slices.Contains(p.Key, FeatureIDKey) }

// featureIDReader is a reader whose features carry their Feature id as
// the property "@id" (FeatureIDKey).
type featureIDReader struct {
	geomio.Reader
}

func (r featureIDReader) Feature() geomio.Feature {
	f := r.Reader.Feature()
	if len(f.ID) > 0 {
		f.Properties, f.Members = withFeatureID(f.Properties, f.ID), nil
	}
	return f
}

// withFeatureID is props (a JSON object) with the member "@id": id added
// first, unless id is nil or props already has a member "@id".
func withFeatureID(props, id []byte) []byte {
	if len(id) == 0 {
		return props
	}
	if bytes.Contains(props, []byte(`"@id"`)) {
		var m map[string]json.RawMessage
		if json.Unmarshal(props, &m) != nil {
			return props
		}
		if _, ok := m[FeatureIDKey]; ok {
			return props
		}
	}
	out := make([]byte, 0, len(props)+len(id)+8)
	out = append(out, `{"@id":`...)
	out = append(out, id...)
	rest := bytes.TrimSpace(props)
	if len(rest) < 2 || rest[0] != '{' {
		return append(out, '}')
	}
	body := bytes.TrimSpace(rest[1 : len(rest)-1])
	if len(body) > 0 {
		out = append(out, ',')
		out = append(out, body...)
	}
	return append(out, '}')
}

// WithFeatureID is props with the property "@id": id, as a job whose key
// names the Feature id reads a feature (for inspect's check of the key).
func WithFeatureID(props, id []byte) []byte { return withFeatureID(props, id) }
