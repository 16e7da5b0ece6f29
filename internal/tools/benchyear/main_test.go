package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/geoingest/geoingest/geomio/validity"
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
	require.NoError(t, writeParcels(&buf, newSimSource(50, box, true).snapshot()))
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

// The versions' truth is what they changed: the parcels gone are the
// removed ones (split and merged included), the new ones the added, a
// changed parcel differs in its geometry or its attributes as the truth
// says and every other parcel is the same; every geometry stays valid
// (GEOS); the changes are the share asked, of every kind.
func TestVersionsTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := newSimSource(400, [4]float64{13.1, 52.4, 13.2, 52.5}, false)
	v := validity.NewChecker()
	defer v.Close()
	all := newTruth()
	changed, total := 0, 0
	for version := 0; version < 30; version++ {
		before := map[string]parcel.Feature{}
		for _, p := range s.snapshot() {
			before[p.f.ParcelID] = p.f
		}
		tr := s.nextVersion(rng, 0.05)
		after := map[string]parcel.Feature{}
		for _, p := range s.snapshot() {
			after[p.f.ParcelID] = p.f
			valid, known := v.Valid(parcel.AppendEWKBMulti(nil, &p.f))
			require.True(t, valid && known, "version %d: %s is valid", version, p.f.ParcelID)
		}
		unchanged := 0
		for id, f := range before {
			g, ok := after[id]
			require.Equal(t, !ok, tr.removed[id], "%s removed", id)
			if !ok {
				continue
			}
			geomChanged := string(parcel.AppendEWKBMulti(nil, &f)) != string(parcel.AppendEWKBMulti(nil, &g))
			attrs := func(f parcel.Feature) string { return fmt.Sprint(f.Owner, f.LandUse, f.AssessedValue, f.Year) }
			attrsChanged := attrs(f) != attrs(g)
			require.Equal(t, tr.geometry[id], geomChanged, "%s geometry", id)
			require.Equal(t, tr.attributes[id], attrsChanged, "%s attributes: %s / %s", id, attrs(f), attrs(g))
			if !geomChanged && !attrsChanged {
				unchanged++
			}
		}
		for id := range after {
			_, ok := before[id]
			require.Equal(t, !ok, tr.added[id], "%s added", id)
		}
		require.Equal(t, unchanged, tr.unchanged)
		changed += len(before) - tr.unchanged
		total += len(before)
		for k, m := range map[string]map[string]bool{"added": tr.added, "removed": tr.removed, "geometry": tr.geometry, "attributes": tr.attributes} {
			for id := range m {
				map[string]map[string]bool{"added": all.added, "removed": all.removed, "geometry": all.geometry, "attributes": all.attributes}[k][id] = true
			}
		}
	}
	require.InDelta(t, 0.05, float64(changed)/float64(total), 0.01, "the share of parcels changed")
	for _, m := range []map[string]bool{all.added, all.removed, all.geometry, all.attributes} {
		require.NotEmpty(t, m)
	}
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
