//go:build cgo && !geoingest_nogdal

package geomio

import (
	"fmt"
	"os"
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

// TestKMLSizeLimit: a KML document larger than MaxKMLBytes (GDAL reads
// KML whole, so its memory grows with the file) is refused before GDAL
// opens it, loose or inside a KMZ, with a permanent limit error that names
// the file and says to convert it to GeoPackage or FlatGeobuf; at the
// limit it is read. The default (8 MiB) refuses a larger file unread.
func TestKMLSizeLimit(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	kml := filepath.Join(dir, "doc.kml")
	ogr2ogr(t, "-f", "KML", kml, srcCounties, "-nln", "counties")
	st, err := os.Stat(kml)
	require.NoError(t, err)
	size := st.Size()
	zipDir(t, filepath.Join(dir, "x.kmz"), dir, "doc.kml")

	for _, p := range []string{kml, filepath.Join(dir, "x.kmz")} {
		fs, err := readAll2(t, p, Options{Limits: Limits{MaxKMLBytes: size - 1}})
		requireInputError(t, err, p, "KML too large",
			fmt.Sprintf("a KML document of %d bytes, more than %d", size, size-1),
			"convert it to a GeoPackage or FlatGeobuf",
			"over the limit (raise it with --max-kml-bytes or GEOINGEST_MAX_KML_BYTES)")
		require.True(t, IsLimitError(err), "%v", err)
		require.Empty(t, fs)

		fs, err = readAll2(t, p, Options{Limits: Limits{MaxKMLBytes: size}})
		require.NoError(t, err, p)
		require.Len(t, fs, 6, p)
	}

	// The default: a file over 8 MiB is refused by its size alone, never
	// parsed (this one is not even KML).
	big := filepath.Join(dir, "big.kml")
	require.NoError(t, os.WriteFile(big, nil, 0o644))
	require.NoError(t, os.Truncate(big, DefaultLimits.MaxKMLBytes+1))
	_, err = readAll2(t, big, Options{})
	requireInputError(t, err, big, fmt.Sprintf("more than %d", DefaultLimits.MaxKMLBytes), "--max-kml-bytes")
}
