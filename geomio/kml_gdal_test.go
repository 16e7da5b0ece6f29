//go:build cgo && !geoingest_nogdal

package geomio

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/kml"
	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom/encoding/wkb"
)

// readWith reads every feature of one layerReader, copied.
func readWith(t *testing.T, r Reader) ([]Feature, []Layer, error) {
	t.Helper()
	defer r.Close()
	var fs []Feature
	var ls []Layer
	for r.Next() {
		f := r.Feature()
		f.Properties = append([]byte(nil), f.Properties...)
		if f.Geom != nil {
			b, err := wkb.Marshal(f.Geom, wkb.NDR)
			require.NoError(t, err)
			f.Geom, err = wkb.Unmarshal(b)
			require.NoError(t, err)
		}
		if len(ls) == 0 || ls[len(ls)-1].Name != f.Layer {
			ls = append(ls, r.Layer())
		}
		fs = append(fs, f)
	}
	return fs, ls, r.Err()
}

// TestKMLAsGDAL reads each KML with geoingest's reader and with GDAL's
// (LIBKML, the reader ogr2ogr uses, through a GeoPackage ogr2ogr writes) and requires the same layers in the
// same order, and for each feature the same index, geometry, dropped
// altitudes and attributes.
func TestKMLAsGDAL(t *testing.T) {
	requireOGR2OGR(t)
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{}
	for name, doc := range kmlDocs {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(doc), 0o644))
		files[name] = p
	}
	// As ogr2ogr writes them, with attributes (ExtendedData SchemaData).
	files["counties.kml"] = filepath.Join(dir, "counties.kml")
	ogr2ogr(t, "-f", "KML", files["counties.kml"], srcCounties, "-nln", "counties")
	files["bristol.kml"] = filepath.Join(dir, "bristol.kml")
	ogr2ogr(t, "-f", "LIBKML", "-t_srs", "EPSG:4326", files["bristol.kml"], srcBristol, "-nln", "bristol")

	// KMZs: a document zipped (its first .kml is read), and as GDAL's
	// LIBKML writes one: a doc.kml whose NetworkLinks name the layers'
	// documents in the archive.
	kmzDir := filepath.Join(dir, "kmz")
	require.NoError(t, os.MkdirAll(kmzDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(kmzDir, "doc.kml"), []byte(kmlDocs["nested.kml"]), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(kmzDir, "other.kml"), []byte(kmlDocs["lone.kml"]), 0o644))
	files["nested.kmz"] = filepath.Join(dir, "nested.kmz")
	zipDir(t, files["nested.kmz"], kmzDir, "doc.kml", "other.kml")
	files["linked.kmz"] = filepath.Join(dir, "linked.kmz")
	ogr2ogr(t, "-f", "LIBKML", files["linked.kmz"], srcCounties, "-nln", "counties")

	for name, p := range files {
		t.Run(name, func(t *testing.T) {
			base := kml.Base(p)
			var r Reader
			var err error
			if strings.HasSuffix(p, ".kmz") {
				r, err = Open(p, Options{})
			} else {
				r, err = kml.Open(p, p, base, Options{}, 0, nil)
			}
			require.NoError(t, err)
			got, gotLayers, err := readWith(t, r)
			require.NoError(t, err)
			// GDAL's KML reading (LIBKML), the comparison: ogr2ogr copies
			// the document into a GeoPackage (the same doubles, layers,
			// order and field types), which geoingest reads with GDAL.
			gpkg := filepath.Join(dir, name+".gpkg")
			ogr2ogr(t, "-f", "GPKG", gpkg, p)
			f, ok := ogr.FormatOf(gpkg, nil)
			require.True(t, ok)
			o, err := ogr.OpenReader(gpkg, gpkg, f, Options{Limits: DefaultLimits}, 0)
			require.NoError(t, err)
			want, wantLayers, err := readWith(t, o)
			require.NoError(t, err)
			require.NotEmpty(t, want)

			names := func(ls []Layer) (n []string) {
				for _, l := range ls {
					n = append(n, l.Name)
				}
				return n
			}
			require.Equal(t, names(wantLayers), names(gotLayers))
			for i := range gotLayers {
				require.Equal(t, wantLayers[i].SRID, gotLayers[i].SRID)
			}
			require.Len(t, got, len(want))
			for i := range want {
				w, g := want[i], got[i]
				require.Equal(t, w.Index, g.Index)
				require.Equal(t, w.Layer, g.Layer)
				require.Equal(t, w.DroppedZM, g.DroppedZM, "feature %d", i)
				if w.Geom == nil {
					require.Nil(t, g.Geom, "feature %d", i)
				} else {
					require.NotNil(t, g.Geom, "feature %d", i)
					wb, _ := wkb.Marshal(w.Geom, wkb.NDR)
					gb, _ := wkb.Marshal(g.Geom, wkb.NDR)
					require.Equal(t, wb, gb, "feature %d: %T and %T", i, w.Geom, g.Geom)
				}
				var wp, gp map[string]any
				require.NoError(t, json.Unmarshal(w.Properties, &wp))
				require.NoError(t, json.Unmarshal(g.Properties, &gp))
				for k, v := range wp {
					if s, ok := v.(string); ok && (k == "timestamp" || k == "begin" || k == "end") {
						wp[k] = strings.TrimSuffix(s, "Z")
						gp[k] = strings.TrimSuffix(gp[k].(string), "Z")
					}
				}
				require.Equal(t, wp, gp, "feature %d", i)
			}
		})
	}
}
