package chaos

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// object is one upload of the plan: a version of a key.
type object struct {
	key     string
	version int // 1, or 2 for a key's second version
	n       int // features in the file (written for a good object)
	// bad says how the file is broken ("" for a good file). A bad object
	// must end FAILED and dead-lettered, and write nothing.
	bad   string
	large bool // big enough that kills land in the middle of its job
	steal bool // the stealer forces a stolen lease on its job
	slot  int  // its place on the map: keeps every parcel apart
	seed  uint64
	etag  string // from the PUT
	// raw, when set, is the file uploaded (a hostile upload of
	// internal/testsupport/hostile/corpus), whatever the rest says.
	raw []byte
}

// planSpec sizes a plan.
type planSpec struct {
	small, large, steal, twoVersions int
	smallMax, largeN, stealN         int
}

// makePlan lays out the uploads, in upload order: steal targets (stealN
// features) and large objects (largeN/2 to largeN) first, then
// small ones (5 to smallMax features) and three bad objects shuffled, then
// a second version for twoVersions of the small and large keys.
func makePlan(spec planSpec, rng *rand.Rand) []*object {
	var plan []*object
	slot := 0
	add := func(o *object) *object {
		o.slot, o.seed = slot, rng.Uint64()
		slot++
		plan = append(plan, o)
		return o
	}
	var keys []*object
	for i := 0; i < spec.steal; i++ {
		add(&object{key: fmt.Sprintf("parcels/steal-%02d.geojson", i), version: 1, n: spec.stealN, large: true, steal: true})
	}
	for i := 0; i < spec.large; i++ {
		keys = append(keys, add(&object{key: fmt.Sprintf("parcels/large-%02d.geojson", i), version: 1, n: spec.largeN/2 + rng.IntN(spec.largeN/2+1), large: true}))
	}
	for i := 0; i < spec.small; i++ {
		keys = append(keys, add(&object{key: fmt.Sprintf("parcels/p%03d/small-%05d.geojson", i%100, i), version: 1, n: 5 + rng.IntN(spec.smallMax-4)}))
	}
	for _, bad := range []string{"notjson", "truncated", "projected"} {
		add(&object{key: "parcels/bad-" + bad + ".geojson", version: 1, n: 400, bad: bad})
	}
	rest := plan[spec.steal+spec.large:]
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for _, k := range keys[:min(spec.twoVersions, len(keys))] {
		n := 5 + rng.IntN(spec.smallMax-4)
		if k.large {
			n = spec.largeN/2 + rng.IntN(spec.largeN/2+1)
		}
		add(&object{key: k.key, version: 2, n: n, large: k.large})
	}
	return plan
}

// parcel is one generated feature: its uid (a property) and its polygon's
// GeoJSON geometry.
type parcel struct {
	uid  string
	geom []byte
}

// parcels generates o's features: quadrilaterals on a grid of 50 m cells,
// one corner in each quarter of its cell (so every polygon is simple and
// valid), placed in o's own 0.25-degree square of the map so that no two
// objects, or versions, share a parcel. The same object always gives the
// same parcels.
func (o *object) parcels() []parcel {
	rng := rand.New(rand.NewPCG(o.seed, uint64(o.slot)))
	const cell = 0.0005
	side := int(math.Ceil(math.Sqrt(float64(o.n))))
	lon0 := -120 + float64(o.slot%100)*0.25
	lat0 := 10 + float64(o.slot/100)*0.25
	out := make([]parcel, o.n)
	for i := range out {
		x, y := lon0+float64(i%side)*cell, lat0+float64(i/side)*cell
		q := func(dx, dy float64) [2]float64 { // a point in one quarter of the cell
			return [2]float64{x + (dx+rng.Float64()*0.45)*cell, y + (dy+rng.Float64()*0.45)*cell}
		}
		ring := [][2]float64{q(0.02, 0.02), q(0.53, 0.02), q(0.53, 0.53), q(0.02, 0.53)}
		var b bytes.Buffer
		b.WriteString(`{"type":"Polygon","coordinates":[[`)
		for j := 0; j <= len(ring); j++ {
			p := ring[j%len(ring)]
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "[%s,%s]", strconv.FormatFloat(p[0], 'f', 7, 64), strconv.FormatFloat(p[1], 'f', 7, 64))
		}
		b.WriteString(`]]}`)
		out[i] = parcel{uid: fmt.Sprintf("%s#v%d#%d", o.key, o.version, i), geom: b.Bytes()}
	}
	return out
}

// body is the file uploaded for o: a GeoJSON FeatureCollection of its
// parcels, or for a bad object the broken file.
func (o *object) body() []byte {
	if o.raw != nil {
		return o.raw
	}
	var b bytes.Buffer
	switch o.bad {
	case "notjson":
		return []byte("this is not GeoJSON at all\n")
	case "projected":
		// Metres with no crs member: refused as outside the
		// longitude/latitude range.
		b.WriteString(`{"type":"FeatureCollection","features":[`)
		for i := 0; i < o.n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			x, y := 500000+float64(i)*100, 4000000.0
			fmt.Fprintf(&b, `{"type":"Feature","properties":{"i":%d},"geometry":{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}}`,
				i, x, y, x+50, y, x+50, y+50, x, y)
		}
		b.WriteString("]}\n")
		return b.Bytes()
	}
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i, p := range o.parcels() {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"uid":%q,"i":%d},"geometry":`, p.uid, i)
		b.Write(p.geom)
		b.WriteByte('}')
	}
	b.WriteString("]}\n")
	if o.bad == "truncated" {
		// Cut in the middle of a feature, well after the first ones: a
		// parse error part-way through the COPY.
		return b.Bytes()[:b.Len()*7/10]
	}
	return b.Bytes()
}
