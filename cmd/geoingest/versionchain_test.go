package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/parcelchain"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The oracle of every incremental path (docs/design.md, "Versions as
// changes"): after each version of a chain, the source's current rows
// equal, feature for feature, a full load of that version into an empty
// database, whichever command wrote it: ingest, backfill or serve, each
// with the key given as that command takes it (--key, a route's key=).
// ingest/postgis's FuzzDiffChains holds the write gate itself to the same
// oracle over many more chains.

// versionChain is the commands' chain: the edits a little more often
// than the write gate's (FuzzDiffChains draws its own).
func versionChain(seed uint64) *parcelchain.Chain {
	return parcelchain.New(seed, 17, 60, parcelchain.Odds{EditOneIn: 30, MergeOneIn: 2})
}

// sourceDigest is a source's current rows, feature for feature
// (properties, geometry, area, sorted), and its ledger row: count and
// checksum, and area; key "" for the database's one source.
func sourceDigest(t *testing.T, db, key string) (rows, ledger string, area float64) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.NoError(t, conn.QueryRow(context.Background(), `
		SELECT coalesce(string_agg(p.properties::text || ' ' || md5(ST_AsEWKB(p.geom)) || ' ' || p.area_m2::text, E'\n'
		                  ORDER BY p.properties::text, md5(ST_AsEWKB(p.geom))), ''),
		       min(j.feature_count::text || ' ' || j.features_checksum), min(j.total_area_m2)
		FROM geoingest_current_parcels p JOIN jobs j ON j.job_id = p.job_id
		JOIN sources s ON s.current_job_id = j.job_id WHERE $1 = '' OR s.source_key = $1`, key).Scan(&rows, &ledger, &area))
	return rows, ledger, area
}

// chainPath writes each version of a chain through one command and checks
// the oracle after each; with keyed, the key APN is given to the command
// and every parcel whose APN is kept (not the placeholder) keeps its
// feature_id.
func chainPath(t *testing.T, path string, seed uint64, versions int, keyed bool) {
	db, empty := pgtest.NewDB(t), pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	dir := t.TempDir()
	file := filepath.Join(dir, "county.geojson")
	var key []string
	route := "=parcels"
	if keyed {
		key = []string{"--key", "APN"}
		route += "?key=APN"
	}
	c := versionChain(seed)
	fs := c.Parcels
	for v := 1; v <= versions; v++ {
		if v > 1 {
			fs = c.Version()
		}
		ids := queryPairs(t, db, `SELECT properties->>'APN', feature_id FROM geoingest_current_parcels WHERE properties->>'APN' <> '-99'`)
		require.NoError(t, os.WriteFile(file, parcelchain.GeoJSON(fs), 0o644))
		// A later mtime: backfill orders a file's versions by it.
		at := time.Now().Add(time.Duration(v) * time.Minute)
		require.NoError(t, os.Chtimes(file, at, at))
		var code int
		var out, errOut string
		switch path {
		case "ingest":
			code, out, errOut = run(t, env, append(append([]string{"ingest"}, key...), file)...)
		case "backfill":
			code, out, errOut = run(t, env, append([]string{"backfill", "--dir", dir}, key...)...)
		case "serve":
			code, out, errOut = run(t, env, "serve", "--inbox", dir, "--metrics-addr", "", "--route", route,
				"--poll", "100ms", "--settle", "300ms", "--until-idle", "2s")
		}
		require.Equal(t, 0, code, "version %d by %s: %s%s", v, path, out, errOut)
		require.EqualValues(t, v, queryInt(t, db, `SELECT count(*) FROM job_changes`), "version %d by %s: written (%s)", v, path, out)

		// The oracle: the same file, fully loaded as a source of its
		// own (a first version) into a database that held nothing else.
		full := filepath.Join(t.TempDir(), fmt.Sprintf("full-%d.geojson", v))
		require.NoError(t, os.WriteFile(full, parcelchain.GeoJSON(fs), 0o644))
		code, out, errOut = run(t, map[string]string{"DATABASE_URL": empty}, append(append([]string{"ingest"}, key...), full)...)
		require.Equal(t, 0, code, out+errOut)
		gotRows, gotLedger, gotArea := sourceDigest(t, db, "")
		wantRows, wantLedger, wantArea := sourceDigest(t, empty, full)
		require.Equal(t, wantRows, gotRows, "version %d by %s: the current rows are a full load's", v, path)
		require.Equal(t, wantLedger, gotLedger, "version %d by %s: the ledger's count and checksum are a full load's", v, path)
		// The area as verify checks it (a sum in another order).
		require.InEpsilon(t, wantArea, gotArea, 1e-9, "version %d by %s: the ledger's area is a full load's", v, path)
		code, out, errOut = run(t, env, "verify")
		require.Equal(t, 0, code, out+errOut)
		if keyed && v > 1 {
			now := queryPairs(t, db, `SELECT properties->>'APN', feature_id FROM geoingest_current_parcels WHERE properties->>'APN' <> '-99'`)
			for k, id := range now {
				if old, ok := ids[k]; ok {
					require.Equal(t, old, id, "version %d by %s: %s keeps its feature_id", v, path, k)
				}
			}
		}
	}
}

// TestVersionChainsOracleOnEveryPath runs a chain of five versions through
// ingest, backfill and serve, keyed and not.
func TestVersionChainsOracleOnEveryPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path  string
		seed  uint64
		keyed bool
	}{{"ingest", 1, true}, {"backfill", 2, false}, {"serve", 3, true}, {"serve", 4, false}} {
		t.Run(fmt.Sprintf("%s keyed=%v", tc.path, tc.keyed), func(t *testing.T) {
			t.Parallel()
			chainPath(t, tc.path, tc.seed, 5, tc.keyed)
		})
	}
}

// FuzzVersionChainsOnPaths runs random chains through a command against
// the oracle (go test -fuzz FuzzVersionChainsOnPaths -run '^$'
// ./cmd/geoingest): each input is a seed, a length, whether the source is
// keyed, and the command (ingest, backfill, serve). Its seeds (ingest
// unkeyed, backfill keyed) run in go test.
func FuzzVersionChainsOnPaths(f *testing.F) {
	f.Add(uint64(5), uint8(2), false, uint8(0))
	f.Add(uint64(6), uint8(2), true, uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, keyed bool, path uint8) {
		t.Parallel() // the seeds side by side in go test; each its own databases
		chainPath(t, []string{"ingest", "backfill", "serve"}[path%3], seed, 2+int(n%4), keyed)
	})
}
