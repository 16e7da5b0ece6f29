package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/geoingest/geoingest/internal/tools/benchyear/parcel"
	"github.com/stretchr/testify/require"
)

// The simulation's inputs: tiles of the asked zoom inside the extent, a
// source's parcels inside its cell as valid GeoJSON, sizes within the cap.
func TestTileParcelsSources(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100; i++ {
		b := tile(rng, 0)
		require.Less(t, b[0], b[2])
		require.Less(t, b[1], b[3])
		require.Less(t, b[2]-b[0], 0.03, "z14 or deeper: under 0.022 degrees wide")
		require.True(t, b[2] > parcel.MinLon && b[0] < parcel.MaxLon && b[3] > parcel.MinLat && b[1] < parcel.MaxLat, "%v", b)
	}
	var buf bytes.Buffer
	box := [4]float64{13.1, 52.4, 13.2, 52.5}
	require.NoError(t, writeParcels(&buf, 50, box, 3))
	var fc struct {
		Features []struct {
			Geometry struct {
				Coordinates json.RawMessage `json:"coordinates"`
			} `json:"geometry"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &fc))
	require.Len(t, fc.Features, 50)
	var nums []float64
	require.NoError(t, json.Unmarshal(bytes.NewBufferString(stripBrackets(string(fc.Features[7].Geometry.Coordinates))).Bytes(), &nums))
	for k := 0; k+1 < len(nums); k += 2 {
		require.True(t, nums[k] >= box[0] && nums[k] <= box[2] && nums[k+1] >= box[1] && nums[k+1] <= box[3], "%v", nums[k:k+2])
	}
	srcs := makeSources(rand.New(rand.NewPCG(1, 1)), config{sources: 300, maxRows: 100000})
	n := 0
	for _, s := range srcs {
		n += s.n
	}
	require.Len(t, srcs, 300)
	require.InDelta(t, 100000, n, 1000, "scaled to the cap")
	require.Equal(t, 10.0, pct([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99))
	require.Equal(t, 5.0, pct([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50))
}

// stripBrackets turns nested coordinate arrays into one flat JSON array.
func stripBrackets(s string) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for _, r := range s {
		if r != '[' && r != ']' {
			b.WriteRune(r)
		}
	}
	b.WriteByte(']')
	return b.String()
}
