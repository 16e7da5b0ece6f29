//go:build cgo && !geoingest_nogdal

package ogr_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOGRLimits: the formats read with GDAL are bounded by the same
// limits, with the same messages: file, layer, feature and the limit.
func TestOGRLimits(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	gpkg := filepath.Join(dir, "x.gpkg")
	ogr2ogr(t, "-nlt", "PROMOTE_TO_MULTI", "-f", "GPKG", gpkg, srcCounties, "-nln", "counties")
	ogr2ogr(t, "-nlt", "PROMOTE_TO_MULTI", "-f", "GPKG", "-update", gpkg, srcCounties, "-nln", "more")

	_, err := readAll2(t, gpkg, Options{Limits: Limits{MaxVertices: 10}})
	require.True(t, IsLimitError(err), "%v", err)
	require.ErrorContains(t, err, gpkg+`: layer "counties", feature 0: more than 10 vertices, over the limit (raise it with --max-vertices or GEOINGEST_MAX_VERTICES)`)

	_, err = readAll2(t, gpkg, Options{Limits: Limits{MaxRecordBytes: 100}})
	require.ErrorContains(t, err, `layer "counties", feature 0: more than 100 bytes in one feature, over the limit (raise it with --max-feature-bytes`)

	fs, err := readAll2(t, gpkg, Options{Limits: Limits{MaxLayers: 1}})
	require.ErrorContains(t, err, gpkg+": upload: more than 1 layers, over the limit (raise it with --max-layers or GEOINGEST_MAX_LAYERS)")
	require.Len(t, fs, 6, "the first layer's features")

	_, err = readAll2(t, gpkg, Options{Limits: Limits{MaxProperties: 1}})
	require.ErrorContains(t, err, `layer "counties", feature 0: more than 1 properties`)

	fs, err = readAll2(t, gpkg, Options{})
	require.NoError(t, err)
	require.Len(t, fs, 12)
}
