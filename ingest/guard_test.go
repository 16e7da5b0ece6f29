package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func guardsOf(s GuardSummary) []string {
	var out []string
	for _, t := range s.Trips {
		out = append(out, t.Guard)
	}
	return out
}

func TestCheckGuards(t *testing.T) {
	box := [4]float64{13, 52, 14, 53}
	cur := VersionStats{Features: 10000, AreaM2: 1e8, BBox: box, HasBBox: true, Keys: map[string]uint8{"APN": KeyString, "use": KeyString}}
	same := cur
	for name, c := range map[string]struct {
		g    Guards
		v    VersionStats
		want []string
	}{
		"same":               {Guards{}, same, nil},
		"grew":               {Guards{}, VersionStats{Features: 20000, AreaM2: 2e8, BBox: [4]float64{12, 51, 15, 54}, HasBBox: true, Keys: map[string]uint8{"APN": KeyString, "use": KeyString, "new": KeyNumber}}, nil},
		"truncated":          {Guards{}, VersionStats{Features: 10, AreaM2: 1e5, BBox: [4]float64{13, 52, 13.01, 52.01}, HasBBox: true, Keys: cur.Keys}, []string{"shrink", "shrink"}},
		"truncated, off":     {Guards{Shrink: -1}, VersionStats{Features: 10, AreaM2: 1e5, BBox: box, HasBBox: true, Keys: cur.Keys}, nil},
		"shrink 19%":         {Guards{}, VersionStats{Features: 8100, AreaM2: 0.81e8, BBox: box, HasBBox: true, Keys: cur.Keys}, nil},
		"shrink 21%":         {Guards{}, VersionStats{Features: 7900, AreaM2: 1e8, BBox: box, HasBBox: true, Keys: cur.Keys}, []string{"shrink"}},
		"shrink 21%, at 0.3": {Guards{Shrink: 0.3}, VersionStats{Features: 7900, AreaM2: 1e8, BBox: box, HasBBox: true, Keys: cur.Keys}, nil},
		"moved":              {Guards{}, VersionStats{Features: 10000, AreaM2: 1e8, BBox: [4]float64{2, 48, 3, 49}, HasBBox: true, Keys: cur.Keys}, []string{"extent"}},
		"renamed key":        {Guards{}, VersionStats{Features: 10000, AreaM2: 1e8, BBox: box, HasBBox: true, Keys: map[string]uint8{"PARCEL_ID": KeyString, "use": KeyString}}, []string{"drift"}},
		"renamed, no drift":  {Guards{NoDrift: true}, VersionStats{Features: 10000, AreaM2: 1e8, BBox: box, HasBBox: true, Keys: map[string]uint8{"PARCEL_ID": KeyString, "use": KeyString}}, nil},
		"code to number":     {Guards{}, VersionStats{Features: 10000, AreaM2: 1e8, BBox: box, HasBBox: true, Keys: map[string]uint8{"APN": KeyNumber, "use": KeyString}}, []string{"drift"}},
		"left out":           {Guards{}, VersionStats{Features: 10000, AreaM2: 1e8, LeftOut: 2000, BBox: box, HasBBox: true, Keys: cur.Keys}, []string{"quarantine"}},
		"all off":            {Guards{Off: true}, VersionStats{Features: 1, BBox: [4]float64{0, 0, 1, 1}, HasBBox: true}, nil},
		"no keys recorded":   {Guards{}, VersionStats{Features: 10000, AreaM2: 1e8}, nil},
		"key field missing":  {Guards{KeyFields: []string{"PARCEL_ID"}}, VersionStats{Features: 10000, AreaM2: 1e8, BBox: box, HasBBox: true, Keys: cur.Keys}, []string{"drift"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := CheckGuards(c.g, cur, c.v)
			require.Equal(t, c.want, guardsOf(s), s.Reason())
		})
	}
}

func TestGuardOptions(t *testing.T) {
	r, err := ParseRoute("parcels/=parcels?guard-shrink=0.5&guard-extent=off&guard-drift=off")
	require.NoError(t, err)
	require.Equal(t, Guards{Shrink: 0.5, ExtentJump: -1, NoDrift: true}, r.Options.Guards)
	require.Equal(t, "parcels/=parcels?guard-shrink=0.5&guard-extent=off&guard-drift=off", r.String())
	_, err = ParseRoute("parcels/=parcels?guard-shrink=2")
	require.ErrorContains(t, err, "guard-shrink")
	require.Error(t, Guards{Force: true}.Validate(), "force without a reason")
	require.NoError(t, Guards{Force: true, Reason: "county redrew its boundary"}.Validate())
	// The guards are not in the job key.
	a, err := NewJob(Source{Bucket: "b", Key: "k", VersionToken: "v"}, DefaultParams("parcels"), nil)
	require.NoError(t, err)
	b := a
	b.Guards = Guards{Force: true, Reason: "x"}
	require.Equal(t, a.ID, b.ID)
}

func TestKeysReaderKinds(t *testing.T) {
	k := &KeysReader{keys: map[string]uint8{}}
	k.add([]byte(`{"APN":"007","area":12.5,"ok":true,"n":null,"nested":{"a":[1,"}"]},"q\"x":"y"}`))
	k.add([]byte(` { "APN" : 7 , "list":[{"b":"]"}] } `))
	require.Equal(t, map[string]uint8{"APN": KeyString | KeyNumber, "area": KeyNumber, "ok": KeyBool, "n": 0,
		"nested": KeyComplex, `q"x`: KeyString, "list": KeyComplex}, k.keys)
}

func BenchmarkKeysReader(b *testing.B) {
	props := []byte(`{"APN":"0123456789","OWNER":"SMITH JOHN","USE_CODE":"R1","ACRES":0.25,"ZONING":"RS-7","SITUS":"123 MAIN ST","YEAR":1987,"VALUE":325000,"TAXABLE":true,"CITY":"SPRINGFIELD"}`)
	k := &KeysReader{keys: map[string]uint8{}}
	b.SetBytes(int64(len(props)))
	for i := 0; i < b.N; i++ {
		k.add(props)
	}
}
