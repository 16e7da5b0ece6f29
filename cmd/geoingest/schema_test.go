package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// typedSchema is a schema with a parcels mapping of every column type.
const typedSchema = `
targets:
  parcels:
    columns:
      - {name: apn, type: text}
      - {name: county, type: text}
      - {name: owner_id, type: int8}
      - {name: assessed, type: numeric}
      - {name: vacant, type: boolean}
      - {name: sold_on, type: date}
      - {name: updated_at, type: timestamptz}
mappings:
  - name: county-06037
    target: parcels
    fields:
      apn: {from: APN, trim: true}
      county: {from: CNTY, pad: 5}
      owner_id: {from: OWNER_ID}
      assessed: {from: VALUE}
      vacant: {from: VACANT}
      sold_on: {from: SALE_DATE, format: "01/02/2006"}
      updated_at: {from: UPDATED}
`

// typedParcels: three parcels (a leading-zero APN, a county code to pad,
// an owner id beyond int32, a decimal beyond a float's digits), and one
// whose date does not cast.
const typedParcels = `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"APN":" 0012-345 ","CNTY":"37","OWNER_ID":9007199254740993,"VALUE":"123456789.123456789","VACANT":"Y","SALE_DATE":"03/14/2021","UPDATED":"2024-05-01T10:00:00+02:00","NOTE":"kept"},"geometry":{"type":"Polygon","coordinates":[[[13,52],[13.001,52],[13.001,52.001],[13,52.001],[13,52]]]}},
{"type":"Feature","properties":{"APN":"0099","CNTY":37,"OWNER_ID":"42","VALUE":0.1,"VACANT":false,"SALE_DATE":"","UPDATED":null},"geometry":{"type":"Polygon","coordinates":[[[13.01,52],[13.011,52],[13.011,52.001],[13.01,52.001],[13.01,52]]]}},
{"type":"Feature","properties":{"APN":"0100","CNTY":"06037","OWNER_ID":7,"VALUE":"1e3","VACANT":"n","SALE_DATE":"12/31/1999"},"geometry":{"type":"Polygon","coordinates":[[[13.02,52],[13.021,52],[13.021,52.001],[13.02,52.001],[13.02,52]]]}},
{"type":"Feature","properties":{"APN":"0101","CNTY":"37","OWNER_ID":8,"VALUE":"12","VACANT":"y","SALE_DATE":"2021-03-14"},"geometry":{"type":"Polygon","coordinates":[[[13.03,52],[13.031,52],[13.031,52.001],[13.03,52.001],[13.03,52]]]}}
]}`

// TestTypedSchema: a schema file and a mapping. `schema apply` makes the
// typed view; ingest --mapping stores each feature's record (casts
// lossless: leading zeros, a padded code, an int8 beyond int32 and
// float64, a numeric's every digit, a date in the mapping's format, a
// timestamp in UTC) and the unmapped fields in extras; the feature whose
// date does not cast is quarantined (rule cast), not NULLed; ogrinfo
// lists the view with the columns' types; a column added to the schema
// is added to the view in place, and one removed is refused.
func TestTypedSchema(t *testing.T) {
	t.Parallel()
	requireGDALTool(t, "ogrinfo")
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(typedSchema), 0o644))
	data := filepath.Join(dir, "county.geojson")
	require.NoError(t, os.WriteFile(data, []byte(typedParcels), 0o644))

	code, out, errOut := run(t, env, "schema", "apply", "--schema", schema)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "view geoingest_typed_parcels: applied")

	code, out, errOut = run(t, env, "ingest", "--json", "--schema", schema, "--mapping", "no-such", data)
	require.NotEqual(t, 0, code)
	require.Contains(t, out+errOut, `mapping "no-such": not a mapping of schema`)

	code, out, errOut = run(t, env, "ingest", "--json", "--schema", schema, "--mapping", "county-06037", data)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, `"features":3`)
	require.Contains(t, out, `"quarantined":1`)
	code, out, errOut = run(t, env, "quarantine", "list", "--format", "json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"cast": 1`)
	job := queryString(t, db, `SELECT job_id FROM jobs`)
	code, out, errOut = run(t, env, "quarantine", "show", job, "3")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "field SALE_DATE value \\\"2021-03-14\\\" does not cast to sold_on date with format 01/02/2006")

	row := queryString(t, db, `SELECT concat_ws('|', apn, county, owner_id, assessed, vacant, sold_on, updated_at AT TIME ZONE 'UTC', extras->>'NOTE')
		FROM geoingest_typed_parcels WHERE feature_index = 0`)
	require.Equal(t, "0012-345|00037|9007199254740993|123456789.123456789|t|2021-03-14|2024-05-01 08:00:00|kept", row)
	row = queryString(t, db, `SELECT concat_ws('|', apn, county, owner_id, assessed, vacant, coalesce(sold_on::text, 'NULL'), coalesce(updated_at::text, 'NULL'))
		FROM geoingest_typed_parcels WHERE feature_index = 1`)
	require.Equal(t, "0099|00037|42|0.1|f|NULL|NULL", row)
	require.Equal(t, "1000", queryString(t, db, `SELECT assessed::text FROM geoingest_typed_parcels WHERE feature_index = 2`))
	types := queryString(t, db, `SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_name = 'geoingest_typed_parcels' AND ordinal_position > 10`)
	require.Equal(t, "apn text, county text, owner_id bigint, assessed numeric, vacant boolean, sold_on date, updated_at timestamp with time zone", types)

	info, err := exec.Command("ogrinfo", "-ro", "-so", "PG:"+db, "geoingest_typed_parcels").CombinedOutput()
	require.NoError(t, err, string(info))
	for _, want := range []string{"Feature Count: 3", "apn: String", "county: String", "owner_id: Integer64", "assessed: Real", "vacant: Integer(Boolean)", "sold_on: Date", "updated_at: DateTime", "Geometry: Multi Polygon"} {
		require.Contains(t, string(info), want)
	}

	// A column added: the view grows in place. One removed: refused.
	added := strings.Replace(typedSchema, "      - {name: updated_at, type: timestamptz}\n", "      - {name: updated_at, type: timestamptz}\n      - {name: zoning, type: text}\n", 1)
	require.NoError(t, os.WriteFile(schema, []byte(added), 0o644))
	code, out, errOut = run(t, env, "schema", "apply", "--schema", schema)
	require.Equal(t, 0, code, out+errOut)
	require.EqualValues(t, 3, queryInt(t, db, `SELECT count(*) FROM geoingest_typed_parcels WHERE zoning IS NULL`))
	removed := strings.Replace(typedSchema, "      - {name: vacant, type: boolean}\n", "", 1)
	removed = strings.Replace(removed, "      vacant: {from: VACANT}\n", "", 1)
	require.NoError(t, os.WriteFile(schema, []byte(removed), 0o644))
	code, out, errOut = run(t, env, "schema", "apply", "--schema", schema)
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, out+errOut, "a typed column can only be added")
	// The refusal names the file, not a write's step ("normalise
	// features: ERROR: ...", as if a transient failure).
	require.Contains(t, errOut, "geoingest schema: schema "+schema+": ")
	require.NotContains(t, errOut, "normalise features")
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
}

// TestSuggestSchema: inspect --suggest-schema proposes a lossless typed
// schema from a file's values (leading zeros stay text, whole numbers
// beyond int32 are int8, decimals numeric, ISO dates date, booleans
// boolean, mixed values text), and the file it prints is a schema whose
// mapping lands the file with nothing quarantined.
func TestSuggestSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "county.geojson")
	require.NoError(t, os.WriteFile(data, []byte(`{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"APN":"0012345","Owner Id":3000000000,"Value":12.50,"Sold":"2021-03-14","Vacant":true,"Mixed":"a","Units":3},"geometry":{"type":"Polygon","coordinates":[[[13,52],[13.001,52],[13.001,52.001],[13,52.001],[13,52]]]}},
{"type":"Feature","properties":{"APN":"0099","Owner Id":7,"Value":3,"Sold":null,"Vacant":false,"Mixed":4,"Units":12},"geometry":{"type":"Polygon","coordinates":[[[13.01,52],[13.011,52],[13.011,52.001],[13.01,52.001],[13.01,52]]]}}
]}`), 0o644))
	code, out, errOut := run(t, nil, "inspect", "--suggest-schema", data)
	require.Equal(t, 0, code, out+errOut)
	for _, want := range []string{"{name: apn, type: text}  # text with leading zeros (kept)", "{name: owner_id, type: int8}  # whole numbers beyond int32",
		"{name: value, type: numeric}", "{name: sold, type: date}", "{name: vacant, type: boolean}", "{name: mixed, type: text}  # values of several kinds",
		"{name: units, type: int8}  # whole numbers", `owner_id: {from: "Owner Id"}`, `- name: "county"`} {
		require.Contains(t, out, want)
	}
	schema := filepath.Join(dir, "suggested.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(out), 0o644))
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	code, out, errOut = run(t, env, "schema", "apply", "--schema", schema)
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = run(t, env, "ingest", "--json", "--schema", schema, "--mapping", "county", data)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, `"features":2`)
	require.NotContains(t, out, "quarantined")
	require.Equal(t, "0012345|3000000000|12.50|2021-03-14|t|a|3", queryString(t, env["DATABASE_URL"],
		`SELECT concat_ws('|', apn, owner_id, value, sold, vacant, mixed, units) FROM geoingest_typed_parcels WHERE feature_index = 0`))
}

// TestSchemaCheckListsColumns: `schema check` (and apply, which prints the
// same first) lists a target's columns separated by commas, with none
// after the last.
func TestSchemaCheckListsColumns(t *testing.T) {
	t.Parallel()
	schema := filepath.Join(t.TempDir(), "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(typedSchema), 0o644))
	code, out, errOut := run(t, map[string]string{}, "schema", "check", "--schema", schema)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "target parcels: apn text, county text, owner_id int8, assessed numeric, vacant boolean, sold_on date, updated_at timestamptz\n")
	require.NotContains(t, out, ",\n")
	// A mapping lists each column with its field, a field whose name has
	// a space or a comma quoted; it printed Go's formatting of a list
	// ("7 columns from [APN CNTY ...]"), where "Sale Date" read as two
	// fields, and "1 columns".
	require.Contains(t, out, "mapping county-06037 -> parcels: apn from APN, county from CNTY, owner_id from OWNER_ID, assessed from VALUE, vacant from VACANT, sold_on from SALE_DATE, updated_at from UPDATED\n")
	require.NoError(t, os.WriteFile(schema, []byte("targets:\n  parcels:\n    columns:\n      - {name: sold, type: text}\nmappings:\n  - {name: m, target: parcels, fields: {sold: {from: Sale Date}}}\n"), 0o644))
	code, out, errOut = run(t, map[string]string{}, "schema", "check", "--schema", schema)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "mapping m -> parcels: sold from \"Sale Date\"\n")
}

// TestInspectPrintsTheMappingAsJSON: inspect's params line prints a job
// parameter that is not a scalar (the mapping's spec, a composite key) as
// JSON, as the job key hashes it; it printed Go's formatting of a map
// ("mapping=map[columns:[map[column:apn from:APN ...").
func TestInspectPrintsTheMappingAsJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(typedSchema), 0o644))
	data := filepath.Join(dir, "county.geojson")
	require.NoError(t, os.WriteFile(data, []byte(typedParcels), 0o644))
	code, out, errOut := run(t, nil, "inspect", "--schema", schema, "--mapping", "county-06037", data)
	require.Equal(t, 0, code, out+errOut)
	require.NotContains(t, out, "map[")
	require.Contains(t, out, `mapping={"columns":[{"column":"apn","from":"APN","trim":true,"type":"text"},`)
	require.Contains(t, out, ` invalid=repair `)
}

// TestInspectNamesMappedFieldsInNoFeature: inspect under a mapping names
// a mapped field that no feature of a layer has (a typo in from:): its
// column would be NULL in every row of the first version, and the drift
// guard then holds every next version. It said nothing, and "would land".
func TestInspectNamesMappedFieldsInNoFeature(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(strings.Replace(typedSchema, "from: SALE_DATE", "from: SALEDATE", 1)), 0o644))
	data := filepath.Join(dir, "county.geojson")
	require.NoError(t, os.WriteFile(data, []byte(typedParcels), 0o644))
	code, out, errOut := run(t, nil, "inspect", "--schema", schema, "--mapping", "county-06037", data)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "  mapping   field SALEDATE (column sold_on) is in no feature: sold_on would be NULL in every row, and the drift guard would hold the next version\n")
	code, out, errOut = run(t, nil, "inspect", "--json", "--schema", schema, "--mapping", "county-06037", data)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, `"mapped_fields_missing":[{"field":"SALEDATE","column":"sold_on"}]`)

	require.NoError(t, os.WriteFile(schema, []byte(typedSchema), 0o644))
	code, out, errOut = run(t, nil, "inspect", "--schema", schema, "--mapping", "county-06037", data)
	require.Equal(t, 0, code, out+errOut)
	require.NotContains(t, out, "  mapping ")
}

// TestInspectCheckCountsCasts: inspect --check under a mapping counts the
// features whose values would not cast (the job quarantines them, rule
// cast) and names the first; it counted only geometries and said "would
// land" of a file half of which the job then quarantined.
func TestInspectCheckCountsCasts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.yaml")
	require.NoError(t, os.WriteFile(schema, []byte(typedSchema), 0o644))
	data := filepath.Join(dir, "county.geojson")
	require.NoError(t, os.WriteFile(data, []byte(typedParcels), 0o644))
	code, out, errOut := run(t, nil, "inspect", "--check", "--schema", schema, "--mapping", "county-06037", data)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "  check     0 invalid, 0 null, 0 non-polygonal\n")
	require.Contains(t, out, `  cast      1 would not cast (quarantined, rule cast); the first: layer "county" feature 3: field SALE_DATE value "2021-03-14" does not cast to sold_on date with format 01/02/2006 (mapping county-06037)`+"\n")
	code, out, errOut = run(t, nil, "inspect", "--check", "--json", "--schema", schema, "--mapping", "county-06037", data)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, `"cast":1,"cast_first":"layer \"county\" feature 3: field SALE_DATE value`)
	// Without a mapping there is nothing to cast, and no such line.
	code, out, errOut = run(t, nil, "inspect", "--check", data)
	require.Equal(t, 0, code, out+errOut)
	require.NotContains(t, out, "  cast ")
}

// TestBrokenSchemaFileIsNamed: inspect and replay with a --schema file
// that does not parse (or does not exist) say what is wrong with it, as
// ingest does; they said "no schema file (--schema FILE or
// GEOINGEST_SCHEMA)" of the file just given, or, without --mapping,
// nothing at all.
func TestBrokenSchemaFileIsNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("targets:\n  parcels:\n    colums: []\n"), 0o644))
	data := filepath.Join(dir, "county.geojson")
	require.NoError(t, os.WriteFile(data, []byte(typedParcels), 0o644))
	for _, args := range [][]string{
		{"inspect", "--schema", bad, "--mapping", "m", data},
		{"inspect", "--schema", bad, data},
		{"replay", "--schema", bad, "--mapping", "m", data},
	} {
		code, out, errOut := run(t, map[string]string{}, args...)
		require.Equal(t, 1, code, "%v: %s%s", args, out, errOut)
		require.Contains(t, errOut, "schema "+bad+": yaml: unmarshal errors:", args)
		require.NotContains(t, errOut, "no schema file", args)
	}
	code, out, errOut := run(t, map[string]string{}, "inspect", "--schema", filepath.Join(dir, "none.yaml"), "--mapping", "m", data)
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "none.yaml: no such file or directory")
}

// TestSuggestedNamesNeedNoQuotes: the schema inspect --suggest-schema
// prints from a file whose fields are named as every PostgreSQL reserved
// word (pg_get_keywords: reserved, or reserved but a type or function
// name), upper case, with spaces and dashes, a leading digit, or such as
// YAML reads as a boolean, a null or a number, loads as it is, its
// mapping's name goes into a route's mapping= as it is, and every column
// it names can be selected from the typed view unquoted. It suggested
// "order", "user" and "true" (SQL wanted them quoted; "true" read as a
// YAML boolean and the file did not load), "_1" (read as the number 1)
// and the mapping "parcels & co, 2024" (cut at the & and the , of a
// route).
func TestSuggestedNamesNeedNoQuotes(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	words := strings.Fields(queryString(t, env["DATABASE_URL"],
		`SELECT string_agg(word, ' ' ORDER BY word) FROM pg_get_keywords() WHERE catcode IN ('R', 'T')`))
	require.Greater(t, len(words), 90)
	props := map[string]any{}
	for i, w := range words {
		props[strings.ToUpper(w[:1])+w[1:]] = i // Order, Group, ...
	}
	for _, f := range []string{"Sale Date", "owner-name", "1st_owner", "-1", "__2", "NULL", "Yes", "off", "~"} {
		props[f] = "x"
	}
	feature := map[string]any{"type": "Feature", "properties": props,
		"geometry": map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{13, 52}, {13.001, 52}, {13.001, 52.001}, {13, 52.001}, {13, 52}}}}}
	b, err := json.Marshal(map[string]any{"type": "FeatureCollection", "features": []any{feature}})
	require.NoError(t, err)
	dir := t.TempDir()
	data := filepath.Join(dir, "c", "parcels & co, 2024.geojson")
	require.NoError(t, os.MkdirAll(filepath.Dir(data), 0o755))
	require.NoError(t, os.WriteFile(data, b, 0o644))

	code, out, errOut := run(t, nil, "inspect", "--suggest-schema", data)
	require.Equal(t, 0, code, out+errOut)
	schemaFile := filepath.Join(dir, "suggested.yaml")
	require.NoError(t, os.WriteFile(schemaFile, []byte(out), 0o644))
	sc, err := ingest.LoadSchema(schemaFile)
	require.NoError(t, err, out)
	require.Len(t, sc.Mappings, 1)
	m := sc.Mappings[0]
	var names []string
	for _, c := range m.Columns() {
		names = append(names, c.Name)
	}
	require.Len(t, names, len(props), "a column for every field: %s", out)

	// The mapping's name, as printed, in a route.
	code, out, errOut = run(t, nil, "inspect", "--schema", schemaFile, "--object-key", "c/x.geojson",
		"--route", "c/=parcels?mapping="+m.Name, data)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, `"name":"`+m.Name+`"`)

	code, out, errOut = run(t, env, "schema", "apply", "--schema", schemaFile)
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = run(t, env, "ingest", "--json", "--schema", schemaFile, "--mapping", m.Name, data)
	require.Equal(t, 0, code, out+errOut)
	// Every name unquoted in SQL: a reserved word would be a syntax error.
	require.Equal(t, "1", queryString(t, env["DATABASE_URL"],
		"SELECT count(*)::text FROM (SELECT "+strings.Join(names, ", ")+" FROM geoingest_typed_parcels) s"))
}
