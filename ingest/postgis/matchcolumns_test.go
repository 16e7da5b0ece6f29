package postgis

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/stretchr/testify/require"
)

// matchProps are properties whose jsonb text and keys are easy to get
// wrong: member order, repeated members, every number form, escapes,
// code points beyond the BMP, nesting, keys of every JSON type.
var matchProps = []string{
	`{}`,
	`{"APN":" a-2 ","use":"res"}`,
	`{"use":"res","APN":"a-2"}`,
	`{"APN":12.50,"z":1e2,"y":-0,"x":-0.00,"w":1.5E-3,"v":12e+1,"u":1.23e1,"t":0.0,"s":123456789012345678901234567890}`,
	`{"APN":"x,\"y\\ {z}","n":null,"b":true,"f":false}`,
	`{"APN":"null","aa":1,"b":2,"a":3,"a":4}`,
	`{"APN":"\u00e9t\u00c9","s":"tab\tnl\n\u001f \/ \ud83d\ude00 ü"}`,
	`{"APN":"Mikuláš Jäger","owner":"日本 ü \ud83d\ude00","é":"ü"}`,
	`{"APN":[1,2],"o":{"b":[{"y":1,"x":2}],"a":{}}}`,
	`{"APN":"   ","STATE":"ca"}`,
	`{"APN":7,"STATE":" ny "}`,
	`{"APN":true}`,
	`{"STATE":"wa"}`,
}

// TestMatchColumnsAgreeWithTheServer: the writer's match columns (the
// properties' jsonb text and hash, the key, the geometry hash) are what
// the server's SQL expressions give for the same row, which is what lets
// a stored value be compared with one the server computes (a row written
// before migration 0029, or one it transformed or repaired).
func TestMatchColumnsAgreeWithTheServer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, p := range matchProps {
		got, err := prepare.CanonicalProps(nil, []byte(p))
		require.NoError(t, err, p)
		var want string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT $1::jsonb::text`, p).Scan(&want))
		require.Equal(t, want, string(got), "the jsonb text of %s", p)
		for _, key := range [][]string{{"APN"}, {"STATE", "APN"}, {"a b", `q"`}} {
			var wantKey string
			require.NoError(t, b.pool.QueryRow(ctx, `
				SELECT $2::text[]::text || ':' || coalesce(geoingest_key_of(ARRAY(
					SELECT geoingest_key_part($1::jsonb, f) FROM unnest($2::text[]) WITH ORDINALITY u(f, o) ORDER BY o)), '')`,
				p, key).Scan(&wantKey))
			k, _ := prepare.MatchKey(keySignature(key), []byte(p), key)
			require.Equal(t, wantKey, string(k), "the key %v of %s", key, p)
		}
	}

	// Whole rows, written by a job: every stored column equals the
	// server's expression for the row.
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"STATE", "APN"}
	var fs []feat
	for i, props := range matchProps {
		fs = append(fs, feat{Props: props, X: 13 + float64(i)*0.01, Y: 52.5 + float64(i)*0.001, W: 0.001 * float64(i+1)})
	}
	path := writeFeats(t, "v1.geojson", fs)
	require.NoError(t, b.svc.Run(ctx, version(t, path, "v1", "01", p)).Err)
	var n, bad int
	require.NoError(t, b.pool.QueryRow(ctx, `
		SELECT count(*), count(*) FILTER (WHERE
			geom_hash IS DISTINCT FROM geoingest_geom_hash(geom)
			OR props_hash IS DISTINCT FROM geoingest_props_hash(properties)
			OR match_key IS DISTINCT FROM '{STATE,APN}:' || coalesce(geoingest_key_of(ARRAY[
				geoingest_key_part(properties, 'STATE'), geoingest_key_part(properties, 'APN')]), ''))
		FROM geoingest_store.parcels`).Scan(&n, &bad))
	require.Equal(t, len(matchProps), n)
	require.Zero(t, bad, "rows whose stored match columns are not the server's")

	// GeomHash is the server's hash of the EWKB as stored.
	var ewkb []byte
	var gh string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT ST_AsEWKB(geom), replace(geoingest_geom_hash(geom)::text, '-', '') FROM geoingest_store.parcels LIMIT 1`).Scan(&ewkb, &gh))
	h := prepare.GeomHash(ewkb)
	require.Equal(t, gh, hex.EncodeToString(h[:]))
}

// TestDiffOverRowsWithoutMatchColumns: a generation whose rows have no
// stored match columns (written before migration 0029) is matched by the
// server's expressions of the same columns: its unchanged rows stay the
// same physical rows, the changes are the same, and the oracle holds.
func TestDiffOverRowsWithoutMatchColumns(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprint("keyed=", keyed), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			p := ingest.DefaultParams("parcels")
			if keyed {
				p.Key = []string{"APN"}
			}
			c := newChain(5, 30)
			v1 := writeFeats(t, "v1.geojson", c.Parcels)
			require.NoError(t, b.svc.Run(ctx, version(t, v1, "v1", "01", p)).Err)
			_, err := b.pool.Exec(ctx, `UPDATE geoingest_store.parcels SET match_key = NULL, geom_hash = NULL, props_hash = NULL`)
			require.NoError(t, err)
			tuples := func() map[string]string {
				out := map[string]string{}
				r, err := b.pool.Query(ctx, `SELECT properties->>'APN', ctid::text FROM geoingest_store.parcels`)
				require.NoError(t, err)
				for r.Next() {
					var k, c string
					require.NoError(t, r.Scan(&k, &c))
					out[k] = c
				}
				require.NoError(t, r.Err())
				return out
			}
			before := tuples()
			fs := append([]feat(nil), c.Parcels...)
			fs[0].Props = `{"APN":"P-1","use":"com","v":0}`
			v2 := writeFeats(t, "v2.geojson", fs)
			res := b.svc.Run(ctx, version(t, v2, "v2", "02", p))
			require.NoError(t, res.Err)
			if keyed {
				require.Equal(t, ingest.ChangeCounts{Attributes: 1, Unchanged: 29}, res.Changes.Counts)
			} else {
				// Without a key the changed parcel is matched by its overlap.
				require.Equal(t, ingest.ChangeCounts{Attributes: 1, Unchanged: 29}, res.Changes.Counts)
			}
			after := tuples()
			for k, c := range before {
				if k != "P-1" {
					require.Equal(t, c, after[k], "%s is not rewritten", k)
				}
			}
			requireVerified(t, b)
		})
	}
}

// TestDiffOfAProjectedSource: a source in a projected CRS is transformed
// by the server (the staging table), so its match columns are computed
// there (a full load's staging stores none yet); a new version with one attribute changed writes that one row
// and leaves the others where they are, and verify is clean.
func TestDiffOfAProjectedSource(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"APN"}
	write := func(name string, use string) string {
		var sb strings.Builder
		sb.WriteString(`{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::3857"}},"features":[`)
		for i := 0; i < 20; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			u := "res"
			if i == 3 {
				u = use
			}
			x, y := 1450000+float64(i)*1000, 6890000.0
			fmt.Fprintf(&sb, `{"type":"Feature","properties":{"APN":"P-%d","use":%q},"geometry":{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}}`,
				i, u, x, y, x+500, y, x+500, y+500, x, y+500, x, y)
		}
		sb.WriteString("]}")
		path := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o644))
		return path
	}
	require.NoError(t, b.svc.Run(ctx, version(t, write("v1.geojson", "res"), "v1", "01", p)).Err)
	res := b.svc.Run(ctx, version(t, write("v2.geojson", "com"), "v2", "02", p))
	require.NoError(t, res.Err)
	require.Equal(t, ingest.ChangeCounts{Attributes: 1, Unchanged: 19}, res.Changes.Counts)
	// The first version's rows were transformed by a full load's staging
	// and have no match columns (the server computes them when needed);
	// the row the diff wrote has the server's.
	var stored, bad int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE geom_hash IS NOT NULL),
		count(*) FILTER (WHERE geom_hash <> geoingest_geom_hash(geom) OR props_hash <> geoingest_props_hash(properties))
		FROM geoingest_store.parcels`).Scan(&stored, &bad))
	require.Equal(t, 1, stored)
	require.Zero(t, bad, "the server's match columns of the rows it transformed")
	requireVerified(t, b)
}
