package geomio

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIdentifyPRJ(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wkt  string
		want int
	}{
		{`GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["Degree",0.0174532925199433]]`, 4326},
		{`PROJCS["WGS_1984_Web_Mercator_Auxiliary_Sphere",GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]]]]`, 3857},
		{`PROJCS["British_National_Grid",GEOGCS["GCS_OSGB_1936"]]`, 27700},
		{`PROJCS["NAD_1983_UTM_Zone_18N",GEOGCS["GCS_North_American_1983"]]`, 26918},
		{`PROJCS["WGS_1984_UTM_Zone_33N",GEOGCS["GCS_WGS_1984"]]`, 32633},
		{`PROJCS["WGS 84 / UTM zone 21S",GEOGCS["WGS 84"]]`, 32721},
		{`GEOGCS["GCS_North_American_1983",DATUM["D_North_American_1983"]]`, 4269},
		// The root authority wins over names and over nested authorities.
		{`PROJCS["whatever",GEOGCS["WGS 84",AUTHORITY["EPSG","4326"]],AUTHORITY["EPSG","2193"]]`, 2193},
		{`PROJCRS["NZGD2000 / New Zealand Transverse Mercator 2000",BASEGEOGCRS["NZGD2000",ID["EPSG",4167]],ID["EPSG",2193]]`, 2193},
		// Not known: 0, never a guess from a nested element.
		{`PROJCS["NAD83 / Massachusetts Mainland",GEOGCS["NAD83",AUTHORITY["EPSG","4269"]]]`, 0},
		{`PROJCS["WGS_1984_UTM_Zone_61N",GEOGCS["GCS_WGS_1984"]]`, 0},
		{`LOCAL_CS["foo"]`, 0},
		{`garbage`, 0},
		{``, 0},
	} {
		require.Equal(t, tc.want, identifyPRJ(tc.wkt), tc.wkt)
	}
}
