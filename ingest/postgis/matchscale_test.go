package postgis

import (
	"context"
	"fmt"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// TestFullReplaceMatchesAsTheDiff: a version whose only change is a
// number's scale (12.50 -> 12.5, 1.0 -> 1) records no change (0063), and a
// full replace pairs it as the diff does: keyed by key, unkeyed by overlap
// (its bytes differ: not identical content). The full replace hashed
// properties with jsonb_hash_extended, which hashes 12.50 and 12.5 alike,
// and paired it by content: the same changes, other match counts.
func TestFullReplaceMatchesAsTheDiff(t *testing.T) {
	t.Parallel()
	for _, key := range [][]string{nil, {"APN"}} {
		t.Run(fmt.Sprintf("key=%v", key), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			diff, full := setup(t), setup(t)
			full.store.FullReplace = true
			p := ingest.DefaultParams("parcels")
			p.Key = key
			for i, props := range []string{`{"APN":"Z","v":12.50}`, `{"APN":"Z","v":12.5}`, `{"APN":"Z","v":1.0}`, `{"APN":"Z","v":1}`} {
				path := write(t, "x.geojson", collection("", square(1, `{"APN":"Y"}`), square(2, props)))
				var got []*ingest.Changes
				for _, b := range []*bundle{diff, full} {
					res := b.svc.Run(ctx, version(t, path, fmt.Sprint("v", i+1), fmt.Sprintf("%04d", i+1), p))
					require.NoError(t, res.Err)
					got = append(got, res.Changes)
				}
				if i == 0 {
					continue
				}
				require.Equal(t, got[0].Counts, got[1].Counts, "version %d: a full replace's changes are the diff's", i+1)
				require.Equal(t, got[0].Matched, got[1].Matched, "version %d: and so are its match counts", i+1)
				want := ingest.ChangeCounts{Unchanged: 2} // 12.50 -> 12.5, 1.0 -> 1: a scale is no change
				if i == 2 {
					want = ingest.ChangeCounts{Attributes: 1, Unchanged: 1} // 12.5 -> 1.0: a value is
				}
				require.Equal(t, want, got[1].Counts, "version %d", i+1)
			}
		})
	}
}
