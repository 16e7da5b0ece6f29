package geojson

import (
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
)

// TestScanTopLevelMember: the crs pre-scan finds a top-level member, not
// one nested in a value or named in a string.
func TestScanTopLevelMember(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ content, want string }{
		{`{"a":{"crs":1},"crs" : {"x":[1,"]"]} }`, `{"x":[1,"]"]}`},
		{`{"features":[{"crs":2}],"b":"crs","crs":"EPSG:1"}`, `"EPSG:1"`},
		{`{"features":[],"c\"rs":3}`, ``},
	} {
		got, err := scanTopLevelMember(geomiotest.WriteTemp(t, "a.json", tc.content), "crs", 1024)
		require.NoError(t, err)
		require.Equal(t, tc.want, string(got), tc.content)
	}
}
