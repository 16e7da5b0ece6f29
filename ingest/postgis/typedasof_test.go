package postgis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// typedAsOfCols are the columns geoingest_typed_parcels_as_of shares with
// the typed view, compared row for row.
const typedAsOfCols = `feature_id, job_id, feature_index, layer, pipeline_version, area_m2, extras, ST_AsBinary(geom),
	apn, owner_id, assessed, vacant, sold_on, updated_at`

// TestTypedAsOf: the typed view as of a time (migration 0054) gives, at
// each version's time, that version's mapped features with their typed
// columns: as of now, exactly the typed view's rows and stored values
// (the hard values of typedValues included); as of the first version, its
// values; of one source only when asked; never a source written without a
// mapping; and a column added later, as NULL.
func TestTypedAsOf(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sc, p := typedTestParams(t)
	_, err := b.store.ApplySchema(ctx, sc)
	require.NoError(t, err)
	dbNow := func() time.Time {
		var at time.Time
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&at))
		return at
	}

	r := b.svc.Run(ctx, version(t, writeFeats(t, "v1.geojson", typedFeats(func(int) string { return "" })), "v1", "10", p))
	require.NoError(t, r.Err)
	t1 := dbNow()

	// A version that changes one value and adds a parcel.
	fs := typedFeats(func(int) string { return "" })
	fs[3].Props = strings.Replace(fs[3].Props, `"VALUE":1.50`, `"VALUE":2.75`, 1)
	fs = append(fs, sq(10, `{"APN":"A-20","OWNER":20,"VALUE":20.5,"VACANT":"y","SOLD":"01/01/2020","UPDATED":"2020-01-01T00:00:00Z"}`))
	r = b.svc.Run(ctx, version(t, writeFeats(t, "v2.geojson", fs), "v2", "20", p))
	require.NoError(t, r.Err)
	require.Equal(t, ingest.Written, r.Outcome, r.Reason)

	// A source written without a mapping: in the history, not in the
	// typed view as of any time.
	plain, err := ingest.NewJob(ingest.Source{Bucket: "b", Key: "parcels/plain.geojson", VersionToken: "p1",
		Order: ingest.OrderFromSequencer("10")}, ingest.DefaultParams("parcels"),
		fileFetcher{writeFeats(t, "plain.geojson", []feat{sq(30, `{"APN":"P-1"}`)})})
	require.NoError(t, err)
	require.NoError(t, b.svc.Run(ctx, plain).Err)
	t2 := dbNow()

	var n int64
	var got string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_features_as_of('parcels', $1)`, t2).Scan(&n))
	require.EqualValues(t, 12, n, "the history holds both sources")

	// As of now: the typed view's rows and values, each once.
	var onlyAsOf, onlyView, rows int64
	require.NoError(t, b.pool.QueryRow(ctx, `
		WITH a AS (SELECT `+typedAsOfCols+` FROM geoingest_typed_parcels_as_of($1)),
		     v AS (SELECT `+typedAsOfCols+` FROM geoingest_typed_parcels)
		SELECT (SELECT count(*) FROM (SELECT * FROM a EXCEPT ALL SELECT * FROM v) x),
		       (SELECT count(*) FROM (SELECT * FROM v EXCEPT ALL SELECT * FROM a) x),
		       (SELECT count(*) FROM a)`, t2).Scan(&onlyAsOf, &onlyView, &rows))
	require.Zero(t, onlyAsOf, "rows as of now that the typed view does not hold")
	require.Zero(t, onlyView, "typed view rows missing as of now")
	require.EqualValues(t, len(typedValues)+1, rows)

	// As of the first version: its values and its ten parcels.
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_typed_parcels_as_of($1)`, t1).Scan(&n))
	require.EqualValues(t, len(typedValues), n)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT assessed::text FROM geoingest_typed_parcels_as_of($1) WHERE apn = 'A-3'`, t1).Scan(&got))
	require.Equal(t, "1.50", got)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT assessed::text FROM geoingest_typed_parcels_as_of($1) WHERE apn = 'A-3'`, t2).Scan(&got))
	require.Equal(t, "2.75", got)

	// One source only.
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_typed_parcels_as_of($1, 'b', 'parcels/x.geojson')`, t2).Scan(&n))
	require.EqualValues(t, len(typedValues)+1, n)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_typed_parcels_as_of($1, 'b', 'parcels/plain.geojson')`, t2).Scan(&n))
	require.Zero(t, n, "a source written without a mapping")

	// A column added: the function follows the view, and the features
	// written before it read NULL there.
	sc2, err := ingest.ParseSchema([]byte(strings.Replace(typedTestSchema, "      - {name: updated_at, type: timestamptz}\n",
		"      - {name: updated_at, type: timestamptz}\n      - {name: zoning, type: text}\n", 1)))
	require.NoError(t, err)
	sc2.File = "schema.yaml"
	_, err = b.store.ApplySchema(ctx, sc2)
	require.NoError(t, err)
	var zoning int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*), count(zoning) FROM geoingest_typed_parcels_as_of($1)`, t1).Scan(&n, &zoning))
	require.EqualValues(t, len(typedValues), n)
	require.Zero(t, zoning)
}

// TestTypedCastIsOneDefinition: the cast of a record's field to a typed
// column (migration 0056) is geoingest_typed_cast's, which the list the
// staged path, verify and the as-of views build from is made of; a type
// outside the register's list is refused, not taken for timestamptz.
func TestTypedCastIsOneDefinition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sc, _ := typedTestParams(t)
	_, err := b.store.ApplySchema(ctx, sc)
	require.NoError(t, err)

	var one string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT geoingest_typed_cast('p', 'it''s', 'int8')`).Scan(&one))
	require.Equal(t, `(p.properties ->> 'it''s')::int8`, one)
	var list, each string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT geoingest_typed_casts('parcels', 'f'),
		(SELECT string_agg(', ' || geoingest_typed_cast('f', c.name, c.type), '' ORDER BY c.position)
		 FROM geoingest_typed_columns c WHERE c.target_table = 'parcels')`).Scan(&list, &each))
	require.Equal(t, each, list)
	require.Contains(t, list, `(f.properties ->> 'updated_at')::timestamptz`)

	_, err = b.pool.Exec(ctx, `SELECT geoingest_typed_cast('p', 'x', 'float8')`)
	require.Error(t, err)
	require.Contains(t, err.Error(), "type float8 is not one of")
}
