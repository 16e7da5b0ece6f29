package postgis

import (
	"context"
	"sync"
	"testing"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/stretchr/testify/require"
)

// TestRegisterCRSConcurrently: workers (each with its own Store, as
// separate processes would be) registering the same custom CRS at the
// same moment get one SRID in geoingest's range, registered once in
// spatial_ref_sys; another definition gets another SRID; an EPSG CRS that
// spatial_ref_sys has is its own code.
func TestRegisterCRSConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	robinson, err := crs.Resolve(`PROJCS["World_Robinson",GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Robinson"],PARAMETER["False_Easting",0.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",0.0],UNIT["Meter",1.0]]`)
	require.NoError(t, err)
	require.Equal(t, crs.Custom, robinson.Method)
	const workers = 8
	srids := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srids[i], errs[i] = NewStore(b.pool, nil, nil).RegisterCRS(robinson)
		}()
	}
	wg.Wait()
	for i := range srids {
		require.NoError(t, errs[i])
		require.Equal(t, srids[0], srids[i], "one SRID for one definition")
	}
	require.GreaterOrEqual(t, srids[0], 990000)
	require.LessOrEqual(t, srids[0], 998999)
	var n int
	var auth, srtext string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) OVER (), auth_name, srtext FROM spatial_ref_sys WHERE srid BETWEEN 990000 AND 998999`).Scan(&n, &auth, &srtext))
	require.Equal(t, 1, n, "registered once")
	require.Equal(t, "GEOINGEST", auth)
	require.Equal(t, robinson.Definition, srtext)

	// PostGIS transforms with the registered definition as GDAL does
	// (the CRS matrix checks areas; this checks one point exactly).
	var x, y float64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT ST_X(g), ST_Y(g) FROM ST_Transform(ST_SetSRID(ST_MakePoint(1000000, 5000000), $1::int), 4326) g`, srids[0]).Scan(&x, &y))
	require.InDelta(t, 11.9453158699475, x, 1e-9, "gdaltransform -s_srs +proj=robin +datum=WGS84 -t_srs EPSG:4326 gives 11.9453158699475 46.8583862612299")
	require.InDelta(t, 46.8583862612299, y, 1e-9)

	lcc, err := crs.Resolve(`PROJCS["County_LCC",GEOGCS["GCS_North_American_1983",DATUM["D_North_American_1983",SPHEROID["GRS_1980",6378137.0,298.257222101]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["False_Easting",1000000.0],PARAMETER["False_Northing",500000.0],PARAMETER["Central_Meridian",-98.25],PARAMETER["Standard_Parallel_1",38.1],PARAMETER["Standard_Parallel_2",39.9],PARAMETER["Latitude_Of_Origin",37.5],UNIT["Foot_US",0.3048006096012192]]`)
	require.NoError(t, err)
	other, err := b.svc.Store.RegisterCRS(lcc)
	require.NoError(t, err)
	require.NotEqual(t, srids[0], other)

	utm, err := crs.Resolve("EPSG:26918")
	require.NoError(t, err)
	srid, err := b.svc.Store.RegisterCRS(utm)
	require.NoError(t, err)
	require.Equal(t, 26918, srid, "an EPSG CRS PostGIS has keeps its code")
}
