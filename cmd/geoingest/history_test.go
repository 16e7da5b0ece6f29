package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/stretchr/testify/require"
)

// TestHistoryCommandAsOf: `geoingest history SOURCE --as-of T` gives the
// source as it was at T: between two versions, the first one's features
// (with their feature ids and attributes); after the second, the second's.
// `report area --as-of T` is the report made at T, and so is the JSON
// API's /api/report/area?as_of=T; without as_of the API's report is the
// current one.
func TestHistoryCommandAsOf(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	path := filepath.Join(t.TempDir(), "ids.geojson")
	var ids []int
	for i := 0; i < 50; i++ {
		ids = append(ids, i)
	}
	require.NoError(t, os.WriteFile(path, idVersion(ids, false, nil, nil), 0o644))
	code, _, errOut := run(t, env, "ingest", "--key", "@id", path)
	require.Equal(t, 0, code, errOut)
	code, reportThen, errOut := run(t, env, "report", "area", "--format", "json")
	require.Equal(t, 0, code, errOut)
	time.Sleep(50 * time.Millisecond)
	t1 := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, os.WriteFile(path, idVersion(ids[5:], false, nil, map[int]bool{7: true}), 0o644))
	code, _, errOut = run(t, env, "ingest", "--key", "@id", "--no-guards", path)
	require.Equal(t, 0, code, errOut)

	type out struct {
		Sources []struct {
			Features int64 `json:"features"`
		} `json:"sources"`
		Features struct {
			Features []struct {
				ID         int64 `json:"id"`
				Properties struct {
					Attributes map[string]any `json:"attributes"`
				} `json:"properties"`
			} `json:"features"`
		} `json:"features"`
	}
	var then, now out
	code, o, errOut := run(t, env, "history", "file://"+path, "--as-of", t1, "--format", "json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(o), &then), o)
	code, o, errOut = run(t, env, "history", "file://"+path, "--as-of", "0s", "--format", "json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(o), &now), o)
	require.EqualValues(t, 50, then.Sources[0].Features)
	require.EqualValues(t, 45, now.Sources[0].Features)
	name := func(o out, id string) string {
		for _, f := range o.Features.Features {
			if f.Properties.Attributes["@id"] == id {
				return f.Properties.Attributes["name"].(string)
			}
		}
		return ""
	}
	require.Equal(t, "parcel 7", name(then, "P-7"))
	require.Equal(t, "parcel 7 (sold)", name(now, "P-7"))
	require.Equal(t, "parcel 2", name(then, "P-2"))
	require.Equal(t, "", name(now, "P-2"))
	code, o, errOut = run(t, env, "history", "--as-of", t1)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, o, "50")

	// `report area --as-of T`: the report made at T.
	type report struct {
		Rows       []map[string]any `json:"rows"`
		Total      map[string]any   `json:"total"`
		Reconciled bool             `json:"reconciled"`
		AsOf       *time.Time       `json:"as_of"`
	}
	var want, got report
	require.NoError(t, json.Unmarshal([]byte(reportThen), &want), reportThen)
	code, o, errOut = run(t, env, "report", "area", "--as-of", t1, "--format", "json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "current at "+t1[:19])
	require.Contains(t, errOut, "the rows add up to the total of the parcels current at "+t1[:19], "the parcels then, not the current ones")
	require.NoError(t, json.Unmarshal([]byte(o), &got), o)
	require.NotNil(t, got.AsOf)
	require.True(t, got.Reconciled)
	require.EqualValues(t, 50, got.Total["parcels"])
	require.Equal(t, want.Total, got.Total)
	require.Len(t, got.Rows, len(want.Rows))
	for i := range want.Rows {
		require.Equal(t, want.Rows[i]["admin_unit"], got.Rows[i]["admin_unit"])
		require.Equal(t, want.Rows[i]["parcels"], got.Rows[i]["parcels"])
		require.InDelta(t, want.Rows[i]["area_m2"], got.Rows[i]["area_m2"], 1e-6)
	}
	code, _, errOut = run(t, env, "report", "area", "--as-of", t1, "--format", "svg")
	require.Equal(t, 2, code, "a report as of a time has no map: %s", errOut)

	// The same in the JSON API.
	base := startConsole(t, env)
	var api, cur report
	getJSON(t, base+"/api/report/area?as_of="+url.QueryEscape(t1), 200, &api)
	require.Equal(t, got.AsOf.UTC(), api.AsOf.UTC())
	require.True(t, api.Reconciled)
	require.Equal(t, got.Total, api.Total)
	require.Equal(t, got.Rows, api.Rows)
	getJSON(t, base+"/api/report/area", 200, &cur)
	require.Nil(t, cur.AsOf)
	require.EqualValues(t, 45, cur.Total["parcels"], "without as_of: the current report")
	var e map[string]string
	getJSON(t, base+"/api/report/area?as_of=yesterday", 400, &e)
	require.Contains(t, e["error"], "as_of")
	getJSON(t, base+"/api/report/area?method=nearest", 400, &e)
	// Before the retained history (prune removed the first version's
	// ledger row): refused, as the command refuses it.
	code, _, errOut = run(t, env, "prune", "--keep-superseded", "0", "--prune-min-age", "0s")
	require.Equal(t, 0, code, errOut)
	getJSON(t, base+"/api/report/area?as_of="+url.QueryEscape(t1), 400, &e)
	require.Contains(t, e["error"], "retained history")
	// The refusal names the source as the tables do, without the
	// server's ERROR: and SQLSTATE (it said "source file//PATH (1): ...").
	code, _, errOut = run(t, env, "history", "--as-of", t1)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "geoingest history: as of a time: source file://"+path+" (pipeline version 1): ")
	require.Contains(t, errOut, "is before its retained history")
	require.NotContains(t, errOut, "SQLSTATE")
	require.NotContains(t, errOut, "ERROR:")
}

// TestHistoryRefusesAnUnknownTarget: --target names a feature table;
// another name was taken, and printed an empty history with exit 0 (the
// same as a time before any source), as if that table had none.
func TestHistoryRefusesAnUnknownTarget(t *testing.T) {
	t.Parallel()
	// A database that is never there: the refusal comes before any
	// connection (and no embedded cluster is started on demand).
	env := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}
	for _, format := range []string{"table", "geojson"} {
		code, out, errOut := run(t, env, "history", "--as-of", "0s", "--target", "parcel", "--format", format)
		require.Equal(t, 2, code, out+errOut)
		require.Contains(t, errOut, `geoingest history: --target "parcel": want parcels or admin_units`)
		require.Empty(t, out)
	}
}
