package main

import (
	"math/rand/v2"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// splitWaves deals every job into exactly one of at most n waves, none
// empty, sizes within one of each other, and keeps one wave as it is.
func TestSplitWaves(t *testing.T) {
	var jobs []ingest.Job
	for i := 0; i < 10; i++ {
		j, err := ingest.NewDeleteJob(ingest.Source{Bucket: "b", Key: string(rune('a' + i)), VersionToken: "v"}, ingest.DefaultParams("parcels"))
		require.NoError(t, err)
		jobs = append(jobs, j)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	one := splitWaves(jobs, 1, rng)
	require.Len(t, one, 1)
	require.Equal(t, jobs, one[0], "one wave: the month's jobs as they were")

	for _, n := range []int{2, 3, 4, 10, 25} {
		ws := splitWaves(jobs, n, rng)
		require.Len(t, ws, min(n, len(jobs)))
		seen := map[string]int{}
		lo, hi := len(jobs), 0
		for _, w := range ws {
			require.NotEmpty(t, w)
			lo, hi = min(lo, len(w)), max(hi, len(w))
			for _, j := range w {
				seen[j.Source.Key]++
			}
		}
		require.LessOrEqual(t, hi-lo, 1, "n=%d: sizes %d..%d", n, lo, hi)
		require.Len(t, seen, len(jobs), "n=%d", n)
		for k, c := range seen {
			require.Equal(t, 1, c, "n=%d: %s in %d waves", n, k, c)
		}
	}
	require.Len(t, splitWaves(nil, 4, rng), 1, "no jobs: one empty wave, which delivers nothing")
}
