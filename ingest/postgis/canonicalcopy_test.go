package postgis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/stretchr/testify/require"
)

// canonicalCorpus is properties that test where the canonical text and
// jsonb could part: numbers in every form and size, escapes, surrogates,
// NUL, repeated keys, depth, white space, and JSON that jsonb refuses.
var canonicalCorpus = []string{
	`{"a":"\u0000"}`,
	`{"a":"\ud800"}`,
	`{"a":"\udc00x"}`,
	`{"a":"\ud83d\ude00","b":"\u00e9\u0301","c":"\/\b\f\r"}`,
	`{"a":1e1000,"b":1e-1000,"c":-0.0e5,"d":0e10,"e":100e-2,"f":-1.5e-7,"g":1E400}`,
	`{"a":123456789012345678901234567890.123456789,"b":1e100000}`,
	`{"a":01}`,
	`{"a":1.}`,
	`{"a":.5}`,
	`{"a":"x"} trailing`,
	`{"a" : [ ] , "b" : { } ,"c":[ 1 , {"z":1,"y":2} ]}`,
	`{"a":true,"a":false,"b":1,"a":null}`,
	`{"\"":1,"\\":2,"\n":3,"\u0041":4,"A":5}`,
	`{"a":"` + "\xff" + `"}`,
	`{"a":"tab	raw"}`,
	`{"y":1,"x":2,"zz":3,"aaa":4,"b":5,"c":6,"d":7,"e":8,"f":9,"g":10,"h":11,"i":12,"j":13,"k":14,"l":15,"m":16,"n":17,"o":18,"p":19,"q":20,"r":21,"s":22,"t":23,"u":24,"v":25}`,
	`{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`,
	`{"a":` + strings.Repeat(`{"b":`, 63) + `1` + strings.Repeat("}", 63) + `}`,
}

// TestCanonicalPropertiesAreTheServersJSONB: the writer sends a feature's
// properties as their canonical text (canonicalFields), so that text must
// be the jsonb the server would have made of the properties as they came:
// for every object the canonicaliser takes, it is the server's jsonb text
// of the original (and so reads back as the same jsonb), and an object the
// server refuses is never one the canonicaliser takes (it goes as it came,
// and the server refuses it as before). Then a job of such properties
// stores, for each feature, the jsonb of its properties as written in the
// file, also for properties the canonicaliser leaves to the server.
func TestCanonicalPropertiesAreTheServersJSONB(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(31, 35))
	objs := append(append([]string(nil), matchProps...), canonicalCorpus...)
	for n := 0; n < 300; n++ {
		objs = append(objs, randomObject(r, 0))
	}
	jsonbText := func(s string) (string, error) {
		var out string
		err := b.pool.QueryRow(ctx, `SELECT $1::text::jsonb::text`, s).Scan(&out)
		return out, err
	}
	var accepted []string
	taken, left := 0, 0
	for _, o := range objs {
		want, serverErr := jsonbText(o)
		got, err := prepare.CanonicalProps(nil, []byte(o))
		if err != nil {
			left++
			if serverErr == nil {
				accepted = append(accepted, o)
			}
			continue
		}
		taken++
		require.NoError(t, serverErr, "the canonicaliser takes %q, which the server refuses", o)
		require.Equal(t, want, string(got), "the canonical text of %q", o)
		again, err := jsonbText(string(got))
		require.NoError(t, err)
		require.Equal(t, want, again, "the canonical text of %q read as jsonb", o)
		accepted = append(accepted, o)
	}
	require.Greater(t, left, 5, "the corpus has objects the canonicaliser leaves to the server")
	require.Greater(t, taken, 300)

	// The write: each feature's stored properties are the server's jsonb of
	// what the file says; the deep object (left to the server) among them.
	var fs []feat
	for i, props := range accepted {
		fs = append(fs, feat{Props: props, X: 13 + float64(i%50)*0.01, Y: 52.5 + float64(i/50)*0.01, W: 0.005})
	}
	path := writeFeats(t, "v1.geojson", fs)
	res := b.svc.Run(ctx, version(t, path, "v1", "01", ingest.DefaultParams("parcels")))
	require.NoError(t, res.Err)
	rows, err := b.pool.Query(ctx, `SELECT feature_index, properties::text FROM geoingest_store.parcels ORDER BY feature_index`)
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		var i int
		var stored string
		require.NoError(t, rows.Scan(&i, &stored))
		want, err := jsonbText(accepted[i])
		require.NoError(t, err)
		require.Equal(t, want, stored, "feature %d's properties %s", i, accepted[i])
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(accepted), n, fmt.Sprintf("features written of %d", len(accepted)))
}
