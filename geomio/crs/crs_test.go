package crs

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const esriMassFeet = `PROJCS["NAD_1983_StatePlane_Massachusetts_Mainland_FIPS_2001_Feet",GEOGCS["GCS_North_American_1983",DATUM["D_North_American_1983",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",656166.667],PARAMETER["False_Northing",2460625.0],PARAMETER["Central_Meridian",-71.5],PARAMETER["Standard_Parallel_1",42.6833333333333],PARAMETER["Standard_Parallel_2",41.7166666666667],PARAMETER["Latitude_Of_Origin",41.0],UNIT["US survey foot",0.304800609601219]]`

func TestResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		method     Method
		epsg       int
		minConf    int
		wantErr    string // substring of an *InputError
	}{
		{name: "ESRI state plane in US feet", text: esriMassFeet, method: Identified, epsg: 2249, minConf: 90},
		{name: "UTF-8 BOM dropped", text: "\uFEFF" + esriMassFeet + "\n", method: Identified, epsg: 2249, minConf: 90},
		{name: "ESRI national grid", text: `PROJCS["British_National_Grid",GEOGCS["GCS_OSGB_1936",DATUM["D_OSGB_1936",SPHEROID["Airy_1830",6377563.396,299.3249646]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["False_Easting",400000.0],PARAMETER["False_Northing",-100000.0],PARAMETER["Central_Meridian",-2.0],PARAMETER["Scale_Factor",0.9996012717],PARAMETER["Latitude_Of_Origin",49.0],UNIT["Meter",1.0]]`,
			method: Identified, epsg: 27700, minConf: 70},
		{name: "WKT1 with easting-first AXIS for a northing-first EPSG grid", text: `PROJCS["SWEREF99 TM",GEOGCS["SWEREF99",DATUM["SWEREF99",SPHEROID["GRS 1980",6378137,298.257222101]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",15],PARAMETER["scale_factor",0.9996],PARAMETER["false_easting",500000],PARAMETER["false_northing",0],UNIT["metre",1],AXIS["Easting",EAST],AXIS["Northing",NORTH]]`,
			method: Identified, epsg: 3006, minConf: 70},
		{name: "WKT1 lon/lat AXIS", text: `GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AXIS["Longitude",EAST],AXIS["Latitude",NORTH]]`,
			method: Identified, epsg: 4326, minConf: 70},
		{name: "authority on the root", text: "EPSG:27700", method: Authority, epsg: 27700, minConf: 100},
		{name: "URN", text: "urn:ogc:def:crs:EPSG::3006", method: Authority, epsg: 3006, minConf: 100},
		{name: "CRS84", text: "urn:ogc:def:crs:OGC:1.3:CRS84", method: Identified, epsg: 4326, minConf: 70},
		{name: "null TOWGS84 on GRS80 is the base CRS", text: `PROJCS["NAD83 / Massachusetts Mainland",GEOGCS["NAD83",DATUM["North_American_Datum_1983",SPHEROID["GRS 1980",6378137,298.257222101],TOWGS84[0,0,0,0,0,0,0]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic_2SP"],PARAMETER["standard_parallel_1",42.68333333333333],PARAMETER["standard_parallel_2",41.71666666666667],PARAMETER["latitude_of_origin",41],PARAMETER["central_meridian",-71.5],PARAMETER["false_easting",200000],PARAMETER["false_northing",750000],UNIT["metre",1]]`,
			method: Identified, epsg: 26986, minConf: 70},
		{name: "custom Robinson", text: `PROJCS["World_Robinson",GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Robinson"],PARAMETER["False_Easting",0.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",0.0],UNIT["Meter",1.0]]`,
			method: Custom},
		{name: "ballpark datum refused", text: "EPSG:3407", wantErr: "ballpark transformation"},
		{name: "geocentric refused", text: "EPSG:4978", wantErr: "not a horizontal CRS"},
		{name: "garbage refused", text: "not a crs", wantErr: "PROJ cannot read the CRS"},
		{name: "truncated WKT refused", text: `PROJCS["British_National_Grid",GEOGCS["GCS_OSGB_1936"]]`, wantErr: "PROJ cannot read the CRS"},
		{name: "empty refused", text: " \n", wantErr: "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Resolve(tc.text)
			if tc.wantErr != "" {
				var ie *InputError
				require.True(t, errors.As(err, &ie), "want *InputError, got %v", err)
				require.Contains(t, err.Error(), tc.wantErr)
				// The hint names no CLI flag here (ingest words it:
				// ingest.OptionHint, TestGeomioErrorsNameTheCLIFlagThroughIngest).
				require.Contains(t, err.Error(), "give it as the source SRID")
				require.NotContains(t, err.Error(), "--source-srid")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.method, c.Method, "%+v", c)
			require.Equal(t, tc.epsg, c.EPSG)
			require.GreaterOrEqual(t, c.Confidence, tc.minConf)
			require.Equal(t, tc.text, c.Text)
			require.NotEmpty(t, c.Transformation)
			if tc.method == Custom {
				require.NotEmpty(t, c.Definition)
				require.LessOrEqual(t, len(c.Definition), maxDefinition)
				require.True(t, strings.Contains(c.PROJString, "+proj=robin"), c.PROJString)
			}
		})
	}
}

// BenchmarkResolve is the per-file cost of resolving a .prj (it is never
// paid per feature).
func BenchmarkResolve(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := Resolve(esriMassFeet); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNoDatabase: without PROJ's data (proj-data), Resolve says what to
// install, and the error is not an *InputError: the upload is not at
// fault, so the job is retried rather than failed.
func TestNoDatabase(t *testing.T) {
	t.Setenv("PROJ_DATA", t.TempDir())
	t.Setenv("PROJ_LIB", t.TempDir())
	_, err := Resolve(esriMassFeet)
	require.Error(t, err)
	var ie *InputError
	require.False(t, errors.As(err, &ie), "%v", err)
	require.Contains(t, err.Error(), "apt-get install proj-data")
}
