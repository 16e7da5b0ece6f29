package inspect

import (
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestSuggestLeavesOutObjectsAndArrays: no column type takes an object or
// an array (text refuses them), so a field holding one is left out of the
// suggested mapping, and stays in extras. It was suggested as text
// ("values of several kinds"), and the suggested schema quarantined every
// feature with such a value: a file whose every feature had one failed
// with "no polygonal features to write".
func TestSuggestLeavesOutObjectsAndArrays(t *testing.T) {
	props := []string{
		`{"APN":"0012","TAGS":["a","b"],"META":{"k":1},"MIX":[1],"N":3}`,
		`{"APN":"0099","TAGS":[],"META":{},"MIX":"x","N":4}`,
	}
	var s suggester
	for _, p := range props {
		s.add([]byte(p))
	}
	cols := s.columns()
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"apn", "n"}, names)

	// The suggested schema's mapping casts every feature.
	rep := &Report{Source: "file:///x.geojson", Target: "parcels", Layers: []Layer{{Suggested: cols}}}
	sc, err := ingest.ParseSchema([]byte(SuggestSchema(rep, "x")))
	require.NoError(t, err)
	a := sc.Mapping("x").Applier()
	for _, p := range props {
		_, err := a.Apply(nil, []byte(p))
		require.NoError(t, err, p)
	}
}

// TestSuggestAvoidsAsOfParameterNames: a field named source_bucket or
// source_key gets a column of another name, since schema apply cannot
// make a typed column of either (the as-of functions' parameters): the
// suggested schema was refused by apply with an SQL error.
func TestSuggestAvoidsAsOfParameterNames(t *testing.T) {
	var s suggester
	s.add([]byte(`{"SOURCE_BUCKET":"a","source_key":"b"}`))
	cols := s.columns()
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"source_bucket_2", "source_key_2"}, names)
	rep := &Report{Source: "file:///x.geojson", Target: "parcels", Layers: []Layer{{Suggested: cols}}}
	_, err := ingest.ParseSchema([]byte(SuggestSchema(rep, "x")))
	require.NoError(t, err)
}
