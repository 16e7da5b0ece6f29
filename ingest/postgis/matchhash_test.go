package postgis

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/stretchr/testify/require"
)

// TestMatchHashesAgreeWithTheServer: prepare.HashBytes is the server's
// hash_bytes_extended bit for bit, for texts (hashtextextended) and for
// bytes (hash_array_extended of a bytea, less 31) of every length class
// around lookup3's 12-byte blocks, random and adversarial (zeros, 0xff,
// bytes above 0x7f); and GeomHash and PropsHash are what migration 0044's
// geoingest_geom_hash and geoingest_props_hash give, as is the probe the
// writer asks (serverHashesAgree).
func TestMatchHashesAgreeWithTheServer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(44, 1))
	var texts []string
	var blobs [][]byte
	for n := 0; n < 600; n++ {
		size := n % 80
		if n >= 480 {
			size = 80 + r.IntN(2000)
		}
		blob := make([]byte, size)
		switch n % 4 {
		case 0:
			for i := range blob {
				blob[i] = byte(r.Uint32())
			}
		case 1:
			for i := range blob {
				blob[i] = 0xff
			}
		case 2: // zeros: left as made
		case 3:
			for i := range blob {
				blob[i] = 0x80 | byte(r.Uint32())
			}
		}
		blobs = append(blobs, blob)
		var sb strings.Builder
		for sb.Len() < size {
			c := rune(1 + r.IntN(0x10ffff))
			if r.IntN(2) == 0 {
				c = rune(1 + r.IntN(0x7f))
			}
			if utf8.ValidRune(c) {
				sb.WriteRune(c)
			}
		}
		texts = append(texts, sb.String())
	}
	var th, bh []int64
	require.NoError(t, b.pool.QueryRow(ctx, `
		SELECT (SELECT array_agg(hashtextextended(x COLLATE "C", 0) ORDER BY o) FROM unnest($1::text[]) WITH ORDINALITY u(x, o)),
		       (SELECT array_agg(hash_array_extended(ARRAY[x], 0) ORDER BY o) FROM unnest($2::bytea[]) WITH ORDINALITY u(x, o))`,
		texts, blobs).Scan(&th, &bh))
	require.Len(t, th, len(texts))
	require.Len(t, bh, len(blobs))
	for i, s := range texts {
		require.Equal(t, uint64(th[i]), prepare.HashBytes([]byte(s)), "the text %q", s)
	}
	for i, x := range blobs {
		require.Equal(t, uint64(bh[i]), prepare.HashBytes(x)+31, "the bytes %x", x)
	}

	var probe int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT geoingest_hash_probe()`).Scan(&probe))
	require.Equal(t, prepare.HashBytes([]byte(hashProbeText)), uint64(probe))

	// Random objects: keys of every length, repeated, escaped, beyond
	// ASCII; values nested, numbers in every form.
	objs := append([]string(nil), matchProps...)
	for n := 0; n < 300; n++ {
		objs = append(objs, randomObject(r, 0))
	}
	// Runs of objects with one set of keys in one order and other values,
	// as a file's features are: the canonicaliser then reuses the key
	// order it worked out for the object before.
	for run := 0; run < 20; run++ {
		keys := []string{"a", "b", "aa", "APN", "owner", "land_use", "\\u00e9t\\u00e9", "é", "日本", "k\\\"q", "x y", "year", "parcel_id"}
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		keys = keys[:1+r.IntN(len(keys))]
		if r.IntN(3) == 0 {
			keys = append(keys, keys[0]) // repeated: the last value is kept
		}
		for n := 0; n < 5; n++ {
			var sb strings.Builder
			sb.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, "%q:%s", k, randomValue(r, 1))
			}
			objs = append(objs, sb.String()+"}")
		}
	}
	var phs []string
	require.NoError(t, b.pool.QueryRow(ctx, `
		SELECT array_agg(replace(geoingest_props_hash(x::jsonb)::text, '-', '') ORDER BY o) FROM unnest($1::text[]) WITH ORDINALITY u(x, o)`,
		objs).Scan(&phs))
	for i, o := range objs {
		h, _, ok := prepare.PropsHash(nil, []byte(o))
		require.True(t, ok, o)
		require.Equal(t, phs[i], hex.EncodeToString(h[:]), "the properties hash of %s", o)
	}

	for _, p := range matchProps {
		var ewkb []byte
		var gh, ph string
		require.NoError(t, b.pool.QueryRow(ctx, `
			SELECT ST_AsEWKB(g), replace(geoingest_geom_hash(g)::text, '-', ''), replace(geoingest_props_hash($1::jsonb)::text, '-', '')
			FROM ST_Multi(ST_GeomFromText('POLYGON((13 52,13.001 52,13.001 52.001,13 52.001,13 52))', 4326)) g`, p).Scan(&ewkb, &gh, &ph))
		g := prepare.GeomHash(ewkb)
		require.Equal(t, gh, hex.EncodeToString(g[:]))
		h, _, ok := prepare.PropsHash(nil, []byte(p))
		require.True(t, ok, p)
		require.Equal(t, ph, hex.EncodeToString(h[:]), "the properties hash of %s", p)
		require.True(t, strings.HasPrefix(ph, "0000000000000000"), "a hash of 0044's form")
	}
}

// TestMatchAcrossTheHashUpgrade: rows written before migration 0044 store
// MD5 match hashes. The first version after the upgrade, with one
// attribute changed, records exactly that one change (and keeps every
// other row where it is), keyed or not: an MD5 is never compared with a
// hash of the new form, the server hashes such a row from its content. The
// version after it, over a generation that mixes rows of both forms, with
// one geometry changed, records exactly that one too; verify is clean.
func TestMatchAcrossTheHashUpgrade(t *testing.T) {
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
			c := newChain(7, 30)
			v1 := writeFeats(t, "v1.geojson", c.Parcels)
			require.NoError(t, b.svc.Run(ctx, version(t, v1, "v1", "01", p)).Err)
			// As the writer before 0044 stored them.
			tag, err := b.pool.Exec(ctx, `UPDATE geoingest_store.parcels
				SET geom_hash = md5(ST_AsEWKB(geom))::uuid, props_hash = md5(properties::text)::uuid`)
			require.NoError(t, err)
			require.EqualValues(t, 30, tag.RowsAffected())
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
			require.Equal(t, ingest.ChangeCounts{Attributes: 1, Unchanged: 29}, res.Changes.Counts)
			after := tuples()
			for k, c := range before {
				if k != "P-1" {
					require.Equal(t, c, after[k], "%s is not rewritten", k)
				}
			}
			var md5s, fresh int
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT
				count(*) FILTER (WHERE geom_hash >= geoingest_hash_form_end()),
				count(*) FILTER (WHERE geom_hash = geoingest_geom_hash(geom) AND props_hash = geoingest_props_hash(properties))
				FROM geoingest_store.parcels`).Scan(&md5s, &fresh))
			require.Equal(t, 29, md5s, "the kept rows keep their MD5s")
			require.Equal(t, 1, fresh, "the written row stores the new form")

			fs[1].W *= 1.01
			v3 := writeFeats(t, "v3.geojson", fs)
			res = b.svc.Run(ctx, version(t, v3, "v3", "03", p))
			require.NoError(t, res.Err)
			require.Equal(t, ingest.ChangeCounts{Geometry: 1, Unchanged: 29}, res.Changes.Counts)
			requireVerified(t, b)
		})
	}
}

// randomObject is a random JSON object as a file might hold it: keys of
// every length, some repeated, escaped or beyond ASCII, in any order;
// values strings, numbers in every form, literals, arrays and objects.
func randomObject(r *rand.Rand, depth int) string {
	keys := []string{"a", "b", "aa", "APN", "owner", "land_use", "\\u00e9t\\u00e9", "é", "日本", "k\\\"q", "x y", "year", "parcel_id"}
	var sb strings.Builder
	sb.WriteByte('{')
	for i, n := 0, r.IntN(8); i < n; i++ {
		if i > 0 {
			sb.WriteString([]string{",", ", ", " ,\n"}[r.IntN(3)])
		}
		fmt.Fprintf(&sb, "%q:", keys[r.IntN(len(keys))])
		sb.WriteString(randomValue(r, depth))
	}
	sb.WriteByte('}')
	return sb.String()
}

func randomValue(r *rand.Rand, depth int) string {
	switch k := r.IntN(10); {
	case k == 0 && depth < 3:
		return randomObject(r, depth+1)
	case k == 1 && depth < 3:
		return "[" + randomValue(r, depth+1) + ", " + randomValue(r, depth+1) + "]"
	case k == 2:
		return []string{"true", "false", "null"}[r.IntN(3)]
	case k <= 5:
		return []string{"0", "-0", "12.50", "1e2", "-1.5E-3", "12e+1", "0.000", "123456789012345678901234567890", "-7", "3.14159"}[r.IntN(10)]
	default:
		return []string{`"R1"`, `" a-2 "`, `"Mikuláš Jäger"`, `"tab\tnl\n"`, `"\u00e9\ud83d\ude00"`, `"q\"b\\s\/"`, `""`, `"\u001f"`}[r.IntN(8)]
	}
}

// TestWriterWithoutTheServersHash: a writer whose hash is not the
// server's (serverHashesAgree found them different: a big-endian server)
// stores no hash and has the server hash every row of a new version; the
// match is the same (one change), and every row then stores the server's
// hashes.
func TestWriterWithoutTheServersHash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.store.hashes.Store(hashesDiffer)
	p := ingest.DefaultParams("parcels")
	p.Key = []string{"APN"}
	c := newChain(9, 30)
	v1 := writeFeats(t, "v1.geojson", c.Parcels)
	require.NoError(t, b.svc.Run(ctx, version(t, v1, "v1", "01", p)).Err)
	var hashed int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE geom_hash IS NOT NULL OR props_hash IS NOT NULL)
		FROM geoingest_store.parcels`).Scan(&hashed))
	require.Zero(t, hashed, "a full load stores no hash of the writer's")

	fs := append([]feat(nil), c.Parcels...)
	fs[0].Props = `{"APN":"P-1","use":"com","v":0}`
	v2 := writeFeats(t, "v2.geojson", fs)
	res := b.svc.Run(ctx, version(t, v2, "v2", "02", p))
	require.NoError(t, res.Err)
	require.Equal(t, ingest.ChangeCounts{Attributes: 1, Unchanged: 29}, res.Changes.Counts)
	var n, servers int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*),
		count(*) FILTER (WHERE geom_hash = geoingest_geom_hash(geom) AND props_hash = geoingest_props_hash(properties))
		FROM geoingest_store.parcels`).Scan(&n, &servers))
	require.Equal(t, 30, n)
	require.Equal(t, 1, servers, "the row the diff wrote stores the server's hashes")
	requireVerified(t, b)
}
