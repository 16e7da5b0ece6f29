package geomio

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// corpusDir is the shared corpus of real datasets (see its SOURCES.md).
const corpusDir = "../testdata/corpus"

type oracleDataset struct {
	ID           string         `json:"id"`
	Source       string         `json:"source"`
	Layer        string         `json:"layer"`
	FeatureCount int            `json:"feature_count"`
	EPSG         *int           `json:"source_srs_epsg"`
	NullOrEmpty  int            `json:"n_null_or_empty"`
	GeomTypes    map[string]int `json:"pg_geometry_types"`
}

func loadOracle(t testing.TB) []oracleDataset {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, "oracle.json"))
	require.NoError(t, err)
	var o struct {
		Datasets []oracleDataset `json:"datasets"`
	}
	require.NoError(t, json.Unmarshal(b, &o))
	require.NotEmpty(t, o.Datasets)
	return o.Datasets
}

// corpusPath maps an oracle source ("x/y.shp", "/vsizip/x/y.zip/dir/l.shp")
// to the file Open is given.
func corpusPath(src string) string {
	src = strings.TrimPrefix(src, "/vsizip/")
	if i := strings.Index(src, ".zip"); i >= 0 {
		src = src[:i+4]
	}
	return filepath.Join(corpusDir, src)
}

// knownDeviations lists datasets where geomio deliberately differs from
// GDAL, and why.
var knownDeviations = map[string]string{
	// GeoJSON without crs but with projected coordinates: GDAL loads it as
	// EPSG:4326; geomio refuses to guess and fails (SourceSRID fixes it).
	"jackson_city":   "outside longitude/latitude range",
	"jackson_county": "outside longitude/latitude range",
}

// epsgDeviations are datasets whose SRID geomio identifies where GDAL
// reports none.
var epsgDeviations = map[string]int{
	// The .prj carries AUTHORITY["EPSG","26986"] on its root; GDAL wraps it
	// in a BOUNDCRS because of a null TOWGS84 and reports no EPSG code.
	"train_stations_boundcrs_zip": 26986,
}

func TestCorpusOracle(t *testing.T) {
	t.Parallel()
	for _, d := range loadOracle(t) {
		t.Run(d.ID, func(t *testing.T) {
			t.Parallel()
			layer, fs, err := openAll(t, corpusPath(d.Source), Options{})
			if want, ok := knownDeviations[d.ID]; ok {
				require.Error(t, err)
				require.True(t, IsInputError(err))
				require.Contains(t, err.Error(), want)
				return
			}
			require.NoError(t, err)
			var n, nulls int
			for i, f := range fs {
				require.Equal(t, int64(i), f.Index)
				require.True(t, json.Valid(f.Properties), "feature %d properties %q", i, f.Properties)
				if path.Base(f.Layer) != d.Layer {
					continue // another layer of the same zip
				}
				n++
				if f.Geom == nil {
					nulls++
				} else {
					require.Equal(t, layer.SRID, f.Geom.SRID())
				}
			}
			require.Equal(t, d.FeatureCount, n, "feature count")
			require.Equal(t, d.NullOrEmpty, nulls, "null or empty geometries")
			if want, ok := epsgDeviations[d.ID]; ok {
				require.Equal(t, want, layer.SRID)
			} else if d.EPSG != nil {
				require.Equal(t, *d.EPSG, layer.SRID, "srid from %q", layer.CRSText)
			} else {
				require.Zero(t, layer.SRID, "no crs must stay unknown, got %q", layer.CRSText)
			}
		})
	}
}
