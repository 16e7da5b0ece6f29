package ingest

import (
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

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

	// A key field that the current version had and this one lacks is
	// named once, as the key it is; one it never had, by the key check.
	s := CheckGuards(Guards{KeyFields: []string{"APN", "PARCEL_ID"}}, cur,
		VersionStats{Features: 10000, AreaM2: 1e8, BBox: box, HasBBox: true, Keys: map[string]uint8{"use": KeyString}})
	require.Equal(t, []string{"drift", "drift"}, guardsOf(s), s.Reason())
	require.Equal(t, 1, strings.Count(s.Reason(), "APN"), s.Reason())
	require.Contains(t, s.Reason(), "fields missing: APN (a key or mapped field)")
	require.Contains(t, s.Reason(), "key or mapped fields missing: PARCEL_ID")
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
	k := NewKeysReader(nil)
	k.add([]byte(`{"APN":"007","area":12.5,"ok":true,"n":null,"nested":{"a":[1,"}"]},"q\"x":"y"}`))
	k.add([]byte(` { "APN" : 7 , "list":[{"b":"]"}] } `))
	require.Equal(t, map[string]uint8{"APN": KeyString | KeyNumber, "area": KeyNumber, "ok": KeyBool, "n": 0,
		"nested": KeyComplex, `q"x`: KeyString, "list": KeyComplex}, k.Keys())
}

// TestKeysReaderAgreesWithJSON feeds a KeysReader objects whose keys
// repeat the feature before's, in the same or another order, with the
// same or another kind, some fewer, some escaped, and checks its keys and
// kinds against encoding/json's reading of the same objects.
func TestKeysReaderAgreesWithJSON(t *testing.T) {
	names := []string{"APN", "owner", "use", `q\"x`, "year", "a\u00e9"}
	values := []string{`"s"`, `12.5`, `-3`, `true`, `false`, `null`, `{"k":[1,"}"]}`, `[]`}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		k := NewKeysReader(nil)
		want := map[string]uint8{}
		order := slices.Clone(names)
		kinds := make([]string, len(names))
		for i := range kinds {
			kinds[i] = values[rng.IntN(len(values))]
		}
		for range 20 {
			switch rng.IntN(4) { // most features repeat the one before
			case 0:
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			case 1:
				kinds[rng.IntN(len(kinds))] = values[rng.IntN(len(values))]
			}
			n := len(order) - rng.IntN(3)
			var obj strings.Builder
			obj.WriteString("{")
			for i, name := range order[:n] {
				if i > 0 {
					obj.WriteString(", ")
				}
				obj.WriteString(`"` + name + `":` + kinds[i])
			}
			obj.WriteString("}")
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(obj.String()), &m), obj.String())
			for key, v := range m {
				var kind uint8
				switch v[0] {
				case '"':
					kind = KeyString
				case 't', 'f':
					kind = KeyBool
				case 'n':
				case '{', '[':
					kind = KeyComplex
				default:
					kind = KeyNumber
				}
				want[key] |= kind
			}
			k.add([]byte(obj.String()))
			require.Equal(t, want, k.Keys(), "round %d, after %s", round, obj.String())
		}
	}
}

// BenchmarkKeysReader measures the keys scan per feature, on the
// properties of a feature of the write benchmarks (5 keys:
// writeBenchParcels, 10, and the 21 of bench-write-gate.sh's typed case).
// cpu-ns/op is the thread's CPU time per feature, which other processes
// on a loaded machine hardly move (ns/op is wall time).
func BenchmarkKeysReader(b *testing.B) {
	for _, c := range []struct{ name, props string }{
		{"5keys", `{"parcel_id":"P0000042","owner":"Propriétaire 42","land_use":"résidentiel","assessed_value":100042.5,"year":1992}`},
		{"10keys", `{"APN":"0123456789","OWNER":"SMITH JOHN","USE_CODE":"R1","ACRES":0.25,"ZONING":"RS-7","SITUS":"123 MAIN ST","YEAR":1987,"VALUE":325000,"TAXABLE":true,"CITY":"SPRINGFIELD"}`},
		{"21keys", `{"parcel_id":"p00042","owner":"Owner 42","land_use":"residential","assessed_value":123456.78,"year":1992,"apn_code":"42","county":"06037","zoning":" Z-2 ","city":"City 42","street":"42 Main St","zip":"00042","units":0,"rooms":7,"owner_id":4000000042,"area_ft":542.42,"tax":42.0042,"vacant":false,"homestead":"N","sold_on":"1992-07-15","updated":"2024-07-15T18:42:42Z","note":"n42"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			props := []byte(c.props)
			k := NewKeysReader(nil)
			b.SetBytes(int64(len(props)))
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var t0, t1 unix.Timespec
			_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t0)
			for i := 0; i < b.N; i++ {
				k.add(props)
			}
			_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t1)
			b.ReportMetric(float64(t1.Nano()-t0.Nano())/float64(b.N), "cpu-ns/op")
		})
	}
}
