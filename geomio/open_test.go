package geomio

import (
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/geomiotest"
	"github.com/stretchr/testify/require"
)

// TestOpenJSONArray: JSON text that is neither an object nor a sequence
// is no format Open knows (moved from TestGeoJSON, whose other cases are
// the GeoJSON reader's, in geomio/geojson).
func TestOpenJSONArray(t *testing.T) {
	t.Parallel()
	path := geomiotest.WriteTemp(t, "a.geojson", `[1,2]`)
	_, _, err := openAll(t, path, Options{})
	require.Error(t, err)
	require.True(t, IsInputError(err), "want *Error, got %T %v", err, err)
	require.Contains(t, err.Error(), "unsupported format")
	require.Contains(t, err.Error(), path)
}

func TestUnsupported(t *testing.T) {
	t.Parallel()
	for _, content := range []string{"", "hello", "\x89PNG\r\n"} {
		_, _, err := openAll(t, geomiotest.WriteTemp(t, "x.bin", content), Options{})
		require.ErrorContains(t, err, "unsupported format")
		require.True(t, IsInputError(err))
	}
	_, _, err := openAll(t, geomiotest.WriteTemp(t, "x.zip", "not a zip"), Options{})
	require.ErrorContains(t, err, "invalid zip")
}
