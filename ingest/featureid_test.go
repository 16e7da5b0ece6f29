package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWithFeatureID(t *testing.T) {
	for _, c := range []struct{ props, id, want string }{
		{`{}`, `"A"`, `{"@id":"A"}`},
		{`{"n":1}`, `7`, `{"@id":7,"n":1}`},
		{`{"n":1}`, ``, `{"n":1}`},
		{`{"@id":"way/1","n":1}`, `"X"`, `{"@id":"way/1","n":1}`}, // the file's property is kept
		{`{"note":"\"@id\" here"}`, `"X"`, `{"@id":"X","note":"\"@id\" here"}`},
	} {
		require.Equal(t, c.want, string(withFeatureID([]byte(c.props), []byte(c.id))), c.props)
	}
	r, err := ParseRoute("b:p/=parcels?key=STATE|@id")
	require.NoError(t, err)
	require.Equal(t, []string{"STATE", "@id"}, r.Options.Key)
	p := DefaultParams("parcels")
	p.Key = r.Options.Key
	require.NoError(t, p.Validate())
	require.True(t, namesFeatureID(p))
}
