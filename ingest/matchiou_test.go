package ingest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMatchIoUNaNRefused: a match threshold of NaN passed every range
// check (each comparison with NaN is false), so `ingest --match-iou NaN`
// and a route's `match-iou=NaN` reached the job key, which failed as
// "canonical json: json: unsupported value: NaN" with no job id. Both are
// refused up front, as 1.5 is.
func TestMatchIoUNaNRefused(t *testing.T) {
	p := DefaultParams("parcels")
	for _, bad := range []float64{math.NaN(), -0.5, 1.5} {
		p.MatchIoU = bad
		require.ErrorContains(t, p.Validate(), "want a ratio in (0, 1]", bad)
	}
	for _, ok := range []float64{0, 0.5, 1} { // 0: unset, the default
		p.MatchIoU = ok
		require.NoError(t, p.Validate(), ok)
	}
	for _, bad := range []string{"NaN", "nan", "0", "-1", "1.5", "x"} {
		_, err := ParseRoute("p/=parcels?match-iou=" + bad)
		require.ErrorContains(t, err, "want a ratio in (0, 1]", bad)
	}
	r, err := ParseRoute("p/=parcels?match-iou=0.8")
	require.NoError(t, err)
	require.Equal(t, 0.8, r.Options.MatchIoU)
}
