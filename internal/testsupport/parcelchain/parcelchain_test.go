package parcelchain

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestChain: the same arguments make the same chain, its versions differ
// from each other, and each version is a FeatureCollection of its parcels.
func TestChain(t *testing.T) {
	odds := Odds{EditOneIn: 30, MergeOneIn: 2}
	a, b := New(7, 17, 60, odds), New(7, 17, 60, odds)
	first := append([]Parcel(nil), a.Parcels...)
	if len(first) != 60 {
		t.Fatalf("the first version has %d parcels, want 60", len(first))
	}
	for v := 2; v <= 5; v++ {
		va, vb := a.Version(), b.Version()
		if !reflect.DeepEqual(va, vb) {
			t.Fatalf("version %d: the same seed made different versions", v)
		}
		var fc struct {
			Type     string            `json:"type"`
			Features []json.RawMessage `json:"features"`
		}
		if err := json.Unmarshal(GeoJSON(va), &fc); err != nil || fc.Type != "FeatureCollection" || len(fc.Features) != len(va) {
			t.Fatalf("version %d: %d features for %d parcels, %v", v, len(fc.Features), len(va), err)
		}
	}
	if reflect.DeepEqual(first, a.Parcels) {
		t.Fatal("four versions edited nothing")
	}
	if reflect.DeepEqual(New(8, 17, 60, odds).Version(), New(7, 17, 60, odds).Version()) {
		t.Fatal("two seeds made the same version")
	}
}
