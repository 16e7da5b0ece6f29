package postgis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/migrations"
	"github.com/stretchr/testify/require"
)

// typedTestSchema maps every column type; zoning is added later.
const typedTestSchema = `
targets:
  parcels:
    columns:
      - {name: apn, type: text}
      - {name: owner_id, type: int8}
      - {name: assessed, type: numeric}
      - {name: vacant, type: boolean}
      - {name: sold_on, type: date}
      - {name: updated_at, type: timestamptz}
mappings:
  - name: county
    target: parcels
    fields:
      apn: {from: APN, trim: true}
      owner_id: {from: OWNER}
      assessed: {from: VALUE}
      vacant: {from: VACANT}
      sold_on: {from: SOLD, format: "01/02/2006"}
      updated_at: {from: UPDATED}
`

// typedValues are values that are hard to encode: numerics of every
// shape (exponents, scales, signs, base-10000 boundaries), the int8
// limits, dates before 2000 and at year 1, timestamps with offsets and
// sub-microsecond digits, text with escapes and characters beyond ASCII.
var typedValues = []struct{ apn, owner, value, vacant, sold, updated string }{
	{`"A-0"`, `9223372036854775807`, `0`, `true`, `"01/01/0001"`, `"2024-05-01T10:00:00.1234567+02:00"`},
	{`" A-1 "`, `-9223372036854775808`, `-0.0015`, `"no"`, `"12/31/1999"`, `"1999-12-31T23:59:59Z"`},
	{`"Zoë \"q\" \\ \t"`, `42`, `1e3`, `"Y"`, `"02/29/2000"`, `"2000-01-01T00:00:00.000001Z"`},
	{`"A-3"`, `"17"`, `1.50`, `1`, `"03/14/2021"`, `"1970-01-01T00:00:00-08:00"`},
	{`"A-4"`, `0`, `123456789012345678901234567890.123456789`, `false`, `"01/02/2006"`, `"2262-04-11T23:47:16.854775807Z"`},
	{`"A-5"`, `-1`, `-1.5E-7`, `"f"`, `"06/15/1850"`, `"1901-12-13T20:45:52Z"`},
	{`"A-6"`, `7`, `10000`, `null`, `""`, `null`},
	{`"A-7"`, `8`, `0.0001`, `"t"`, `"07/04/1776"`, `"2038-01-19T03:14:08Z"`},
	{`"A-8"`, `9`, `99999999.99990000`, `true`, `"11/11/2011"`, `"2011-11-11T11:11:11.5Z"`},
	{`"A-9"`, `10`, `-100000000.00000001e-2`, `false`, `"10/10/2010"`, `"2010-10-10T10:10:10+14:00"`},
}

func typedFeats(extra func(i int) string) []feat {
	var fs []feat
	for i, v := range typedValues {
		props := fmt.Sprintf(`{"APN":%s,"OWNER":%s,"VALUE":%s,"VACANT":%s,"SOLD":%s,"UPDATED":%s,"NOTE":"n%d"%s}`,
			v.apn, v.owner, v.value, v.vacant, v.sold, v.updated, i, extra(i))
		fs = append(fs, sq(i, props))
	}
	return fs
}

// typedTestParams is typedTestSchema parsed (as the file schema.yaml)
// and the params of a parcels job under its mapping county, keyed by apn.
func typedTestParams(t *testing.T) (*ingest.Schema, ingest.Params) {
	t.Helper()
	sc, err := ingest.ParseSchema([]byte(typedTestSchema))
	require.NoError(t, err)
	sc.File = "schema.yaml"
	p := ingest.DefaultParams("parcels")
	p.Schema, p.Mapping, p.Key = sc, "county", []string{"apn"}
	return sc, p
}

// requireStoredTyped checks that every stored typed column of every
// current mapped parcel is what the server casts from its record, and
// that want rows are current.
func requireStoredTyped(t *testing.T, b *bundle, cols []string, want int, msg string) {
	t.Helper()
	var conds []string
	for _, c := range cols {
		typ := map[string]string{"apn": "text", "owner_id": "int8", "assessed": "numeric", "vacant": "boolean",
			"sold_on": "date", "updated_at": "timestamptz", "zoning": "text"}[c]
		conds = append(conds, fmt.Sprintf("p.%s IS DISTINCT FROM (p.properties->>'%s')::%s", c, c, typ))
	}
	var n, bad, filled int
	require.NoError(t, b.pool.QueryRow(context.Background(), fmt.Sprintf(
		`SELECT count(*), count(*) FILTER (WHERE %s), count(p.apn) FROM geoingest_store.parcels p
		 JOIN jobs j ON j.job_ref = p.job_ref WHERE j.params ? 'mapping'`, strings.Join(conds, " OR "))).Scan(&n, &bad, &filled))
	require.Equal(t, want, n, msg)
	require.Zero(t, bad, "%s: stored typed values differ from the records' casts", msg)
	require.Equal(t, want, filled, msg)
	// The typed view reads the same rows.
	var v int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM geoingest_typed_parcels`).Scan(&v))
	require.Equal(t, want, v, msg)
}

func relfilenodes(t *testing.T, b *bundle) map[string]int64 {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT c.relname, c.relfilenode::int8 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'geoingest_store' AND c.relkind = 'r'`)
	require.NoError(t, err)
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var node int64
		require.NoError(t, rows.Scan(&name, &node))
		out[name] = node
	}
	require.NoError(t, rows.Err())
	return out
}

// TestTypedColumnsStored: the typed columns are real columns, written by
// the COPY (fresh, with a partition of its own, and in the shared one),
// kept by every path that moves rows (a diff write, a fold, a held
// version approved, the staged path of another CRS), equal to the
// server's cast of each record; adding a column rewrites no row; a job
// whose mapped column is not stored yet is refused (Transient) with the
// command that fixes it; an unmapped source's fields never reach them.
func TestTypedColumnsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sc, p := typedTestParams(t)
	cols := []string{"apn", "owner_id", "assessed", "vacant", "sold_on", "updated_at"}

	// Before `schema apply`: refused, retried later.
	v1 := writeFeats(t, "v1.geojson", typedFeats(func(int) string { return "" }))
	r := b.svc.Run(ctx, version(t, v1, "v1", "10", p))
	require.Error(t, r.Err)
	require.Equal(t, ingest.Transient, ingest.KindOf(r.Err))
	require.Contains(t, r.Err.Error(), "is not stored in parcels yet: run geoingest schema apply --schema schema.yaml")

	_, err := b.store.ApplySchema(ctx, sc)
	require.NoError(t, err)
	b.store.OwnPartitionBytes = 1
	r = b.svc.Run(ctx, version(t, v1, "v1", "10", p))
	require.NoError(t, r.Err)
	require.EqualValues(t, len(typedValues), r.Features)
	requireStoredTyped(t, b, cols, len(typedValues), "fresh, own partition")
	var got string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT concat_ws('|', apn, owner_id, assessed, vacant, sold_on, updated_at AT TIME ZONE 'UTC', extras->>'NOTE')
		FROM geoingest_typed_parcels WHERE feature_index = 2`).Scan(&got))
	require.Equal(t, "Zoë \"q\" \\|42|1000|t|2000-02-29|2000-01-01 00:00:00.000001|n2", got)

	// A column added: the catalog only, no table rewritten; the stored
	// rows read NULL there.
	before := relfilenodes(t, b)
	sc2, err := ingest.ParseSchema([]byte(strings.Replace(typedTestSchema, "      - {name: updated_at, type: timestamptz}\n",
		"      - {name: updated_at, type: timestamptz}\n      - {name: zoning, type: text}\n", 1)))
	require.NoError(t, err)
	sc2.File = "schema.yaml"
	_, err = b.store.ApplySchema(ctx, sc2)
	require.NoError(t, err)
	after := relfilenodes(t, b)
	require.NotEmpty(t, before)
	for name, node := range before {
		require.Equal(t, node, after[name], "table %s rewritten by ADD COLUMN", name)
	}
	var zoning int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_typed_parcels WHERE zoning IS NULL`).Scan(&zoning))
	require.Equal(t, len(typedValues), zoning)

	// A new version: only what changed is written (the diff path), one
	// attribute changed and one parcel added.
	fs := typedFeats(func(int) string { return "" })
	fs[3].Props = strings.Replace(fs[3].Props, `"VALUE":1.50`, `"VALUE":2.75`, 1)
	fs = append(fs, sq(10, `{"APN":"A-20","OWNER":20,"VALUE":20.5,"VACANT":"y","SOLD":"01/01/2020","UPDATED":"2020-01-01T00:00:00Z"}`))
	v2 := writeFeats(t, "v2.geojson", fs)
	b.store.OwnPartitionBytes = 1 << 40
	j2 := version(t, v2, "v2", "20", p)
	r = b.svc.Run(ctx, j2)
	require.NoError(t, r.Err)
	require.Equal(t, ingest.Written, r.Outcome, r.Reason)
	require.NotNil(t, r.Changes)
	require.Equal(t, ingest.ChangeCounts{Added: 1, Attributes: 1, Unchanged: int64(len(typedValues) - 1)}, r.Changes.Counts)
	requireStoredTyped(t, b, cols, len(typedValues)+1, "diff write")
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT assessed::text FROM geoingest_typed_parcels WHERE apn = 'A-3'`).Scan(&got))
	require.Equal(t, "2.75", got)

	// A version written straight into its own table from the spool (most
	// rows changed, migration 0037): the typed columns streamed with it.
	fs[4].Props = strings.Replace(fs[4].Props, `"VALUE":`, `"VALUE":1`, 1)
	b.store.OwnPartitionBytes, b.store.DiffRewriteAbove = 1, -1
	r = b.svc.Run(ctx, version(t, writeFeats(t, "v2b.geojson", fs), "v2b", "25", p))
	require.NoError(t, r.Err)
	require.Equal(t, ingest.Written, r.Outcome, r.Reason)
	require.EqualValues(t, 1, r.Changes.Counts.Attributes)
	requireStoredTyped(t, b, cols, len(typedValues)+1, "written straight into its own table")
	b.store.OwnPartitionBytes, b.store.DiffRewriteAbove = 1<<40, 0

	// A fold moves the rows into the shared partition.
	_, err = b.store.Compact(ctx, ingest.CompactOptions{Keep: 0})
	require.NoError(t, err)
	var own int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'current' AND job_ref > 0`).Scan(&own))
	require.Zero(t, own, "folded")
	requireStoredTyped(t, b, cols, len(typedValues)+1, "folded")

	// A truncated version is held, then approved: its rows move twice.
	v3 := writeFeats(t, "v3.geojson", typedFeats(func(int) string { return "" })[:3])
	j3 := version(t, v3, "v3", "30", p)
	r = b.svc.Run(ctx, j3)
	require.NoError(t, r.Err)
	require.Equal(t, ingest.Pending, r.Outcome)
	_, err = b.svc.Decide(ctx, j3.ID, ingest.Decision{Approve: true, Actor: "op", Reason: "the county shrank"})
	require.NoError(t, err)
	requireStoredTyped(t, b, cols, 3, "held, then approved")

	// Another CRS: the staged path casts on the server.
	crs := writeFeats(t, "merc.geojson", nil)
	var m strings.Builder
	m.WriteString(`{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::3857"}},"features":[`)
	for i, v := range typedValues[:4] {
		if i > 0 {
			m.WriteByte(',')
		}
		x, y := 1447153.0+float64(i)*1000, 6891041.0
		fmt.Fprintf(&m, `{"type":"Feature","properties":{"APN":%s,"OWNER":%s,"VALUE":%s,"VACANT":%s,"SOLD":%s,"UPDATED":%s},"geometry":{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}}`,
			v.apn, v.owner, v.value, v.vacant, v.sold, v.updated, x, y, x+500, y, x+500, y+500, x, y+500, x, y)
	}
	m.WriteString("]}")
	require.NoError(t, os.WriteFile(crs, []byte(m.String()), 0o644))
	jm, err := ingest.NewJob(ingest.Source{Bucket: "b", Key: "parcels/merc.geojson", VersionToken: "m1", Order: ingest.OrderFromSequencer("10")}, p, fileFetcher{crs})
	require.NoError(t, err)
	r = b.svc.Run(ctx, jm)
	require.NoError(t, r.Err)
	requireStoredTyped(t, b, cols, 3+4, "staged (EPSG:3857)")

	// An unmapped source with fields named like the columns, which would
	// not cast: written, and its typed columns NULL.
	un := writeFeats(t, filepath.Base("plain.geojson"), []feat{sq(30, `{"apn":"x","owner_id":"not a number","sold_on":"soon"}`)})
	ju, err := ingest.NewJob(ingest.Source{Bucket: "b", Key: "parcels/plain.geojson", VersionToken: "p1", Order: ingest.OrderFromSequencer("10")},
		ingest.DefaultParams("parcels"), fileFetcher{un})
	require.NoError(t, err)
	r = b.svc.Run(ctx, ju)
	require.NoError(t, r.Err)
	var nulls int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_store.parcels WHERE properties->>'apn' = 'x' AND apn IS NULL AND owner_id IS NULL`).Scan(&nulls))
	require.Equal(t, 1, nulls)

	rep, err := b.store.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)

	// verify reconciles the columns with the records: a stored value
	// changed behind geoingest's back, and one set on an unmapped row,
	// are problems.
	_, err = b.pool.Exec(ctx, `UPDATE geoingest_store.parcels SET assessed = assessed + 1 WHERE apn = 'A-3'`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE geoingest_store.parcels SET vacant = true WHERE properties->>'apn' = 'x'`)
	require.NoError(t, err)
	rep, err = b.store.Verify(ctx)
	require.NoError(t, err)
	require.Len(t, rep.Problems, 2, "%+v", rep.Problems)
	for _, pr := range rep.Problems {
		require.Equal(t, "typed columns", pr.Check)
		require.Contains(t, pr.Detail, "1 rows in parcels whose typed columns are not their records' values")
	}

	// verify's incremental mode checks the current jobs in its scope
	// (migration 0055), and only those: each problem under its source's
	// key alone, both in the last hour, none under another prefix.
	full := rep.Problems
	for _, pr := range full {
		var key string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT source_key FROM jobs WHERE job_id = $1`, pr.JobID).Scan(&key))
		rep, err = b.store.VerifyScope(ctx, ingest.VerifyScope{Source: key})
		require.NoError(t, err)
		require.Equal(t, []ingest.Problem{pr}, rep.Problems, "scope %s", key)
	}
	rep, err = b.store.VerifyScope(ctx, ingest.VerifyScope{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.ElementsMatch(t, full, rep.Problems)
	rep, err = b.store.VerifyScope(ctx, ingest.VerifyScope{Source: "admin/"})
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
}

// TestMigration0036ConvertsTypedViews: down to 35 drops the stored
// columns and the register (the records keep the values); a typed view of
// 0034 made there is converted by up: its columns stored, filled from the
// records of the mapped jobs, and the view reads them.
func TestMigration0036ConvertsTypedViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDB(t)
	b := setupOn(t, url)
	sc, err := ingest.ParseSchema([]byte(typedTestSchema))
	require.NoError(t, err)
	p := ingest.DefaultParams("parcels")
	p.Schema, p.Mapping = sc, "county"
	_, err = b.store.ApplySchema(ctx, sc)
	require.NoError(t, err)
	r := b.svc.Run(ctx, version(t, writeFeats(t, "v1.geojson", typedFeats(func(int) string { return "" })), "v1", "10", p))
	require.NoError(t, r.Err)
	cols := []string{"apn", "owner_id", "assessed", "vacant", "sold_on", "updated_at"}
	requireStoredTyped(t, b, cols, len(typedValues), "written")

	require.NoError(t, migrations.To(url, 35))
	var stored bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'geoingest_store.parcels'::regclass AND attname = 'apn')`).Scan(&stored))
	require.False(t, stored, "down drops the stored columns")
	spec, err := sc.ViewColumns("parcels")
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `SELECT geoingest_apply_typed_view('parcels', $1::jsonb)`, string(spec)) // 0034's, casting
	require.NoError(t, err)

	require.NoError(t, migrations.To(url, migrations.Latest()))
	requireStoredTyped(t, b, cols, len(typedValues), "converted")
	var def string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT pg_get_viewdef('geoingest_typed_parcels')`).Scan(&def))
	require.NotContains(t, def, "->>", "the view reads the stored columns, not casts of the record")
}
