package console

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

// A job's page shows, from the change records (Options.Changes):
//
//   - its source's versions as a timeline: one column per version, oldest
//     first, with its counts of added, removed, geometry and attribute
//     changes as stacked bars (a logarithmic scale, so one change shows
//     beside thousands) and the counts written under it;
//   - its own changes on a map: each changed feature's old box (removed,
//     or the geometry it had) and new box (added, or the geometry it has),
//     drawn from the change record's envelopes.
//
// Both are inline SVG drawn on the server from numbers; every string in
// them (job ids, times, kinds) goes through html/template, which escapes
// it.

// maxTimeline is how many versions the timeline shows (the newest).
const maxTimeline = 40

// maxMapChanges is the most changed features a job's map reads and
// draws; a job with more says so and links to the API.
const maxMapChanges = 5000

// timeline is a source's versions, oldest first.
type timeline struct {
	Width, Height float64
	Versions      []timelineVersion
	More          int // older versions not shown
}

// timelineVersion is one version's column.
type timelineVersion struct {
	Job     string
	This    bool // the page's job
	X       float64
	At      time.Time
	Counts  ingest.ChangeCounts
	First   bool // no base: the source's first version, or after a delete
	Deleted bool // a delete: the source had no generation after it
	Bars    []timelineBar
}

type timelineBar struct {
	Kind  string
	Class string
	Y, H  float64
	N     int64
}

const (
	timelineColumn = 64.0
	timelineBarMax = 110.0
)

// sourceTimeline reads the versions of job's source.
func (h *Handler) sourceTimeline(ctx context.Context, rec ingest.JobRecord) (*timeline, error) {
	if h.opts.Changes == nil || rec.Ledger == nil {
		return nil, nil
	}
	bucket, key := ingest.ParseSourcePrefix(rec.Job.Source)
	if bucket == "" {
		return nil, nil
	}
	cs, err := h.opts.Changes.SourceChanges(ctx, bucket, key, time.Time{})
	if err != nil {
		return nil, err
	}
	var mine []ingest.Changes
	for _, c := range cs {
		if c.Target == rec.Ledger.Target {
			mine = append(mine, c)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	t := &timeline{}
	if len(mine) > maxTimeline {
		t.More = len(mine) - maxTimeline
		mine = mine[len(mine)-maxTimeline:]
	}
	// Each bar's height grows with log10(1 + n), the largest count of the
	// shown versions at timelineBarMax.
	top := 1.0
	for _, c := range mine {
		top = math.Max(top, math.Log10(1+float64(c.Counts.Added+c.Counts.Removed+c.Counts.Geometry+c.Counts.Attributes)))
	}
	scale := timelineBarMax / top
	for i, c := range mine {
		v := timelineVersion{Job: c.Job, This: c.Job == rec.Job.JobID, X: float64(i) * timelineColumn, At: c.RecordedAt,
			Counts: c.Counts, First: c.Base == "" && c.Counts.Removed == 0}
		v.Deleted = c.Counts.Added == 0 && c.Counts.Unchanged == 0 && c.Counts.Geometry == 0 && c.Counts.Attributes == 0 && c.Counts.Removed > 0
		// The stack, from the axis up: its total's log height, shared by
		// the kinds in proportion.
		total := c.Counts.Added + c.Counts.Removed + c.Counts.Geometry + c.Counts.Attributes
		height := math.Log10(1+float64(total)) * scale
		y := timelineBarMax
		for _, k := range []struct {
			kind, class string
			n           int64
		}{{"added", "tl-added", c.Counts.Added}, {"removed", "tl-removed", c.Counts.Removed},
			{"geometry", "tl-geometry", c.Counts.Geometry}, {"attributes", "tl-attributes", c.Counts.Attributes}} {
			if k.n == 0 || total == 0 {
				continue
			}
			hk := height * float64(k.n) / float64(total)
			y -= hk
			v.Bars = append(v.Bars, timelineBar{Kind: k.kind, Class: k.class, Y: round1(y), H: round1(hk), N: k.n})
		}
		t.Versions = append(t.Versions, v)
	}
	t.Width = float64(len(mine)) * timelineColumn
	t.Height = timelineBarMax
	return t, nil
}

// changeMap is a job's changed features as boxes, in SVG coordinates.
type changeMap struct {
	Width, Height float64
	Boxes         []changeBox
	Changed       int64 // the job's changed features (the record's counts)
	TooMany       bool  // more than maxMapChanges: not read
	Extent        [4]float64
}

type changeBox struct {
	FeatureID  int64
	Kind       string
	Class      string
	Old        bool
	X, Y, W, H float64
}

const mapWidth = 720.0

// jobChangeMap reads job's changes and lays their boxes out.
func (h *Handler) jobChangeMap(ctx context.Context, job string) (*changeMap, error) {
	if h.opts.Changes == nil {
		return nil, nil
	}
	c, _, err := h.opts.Changes.JobChanges(ctx, job, false)
	if err != nil {
		return nil, nil // no change record: no map
	}
	m := &changeMap{Changed: c.Counts.Added + c.Counts.Removed + c.Counts.Geometry + c.Counts.Attributes}
	if m.Changed == 0 {
		return nil, nil
	}
	if m.Changed > maxMapChanges {
		m.TooMany = true
		return m, nil
	}
	_, feats, err := h.opts.Changes.JobChanges(ctx, job, true)
	if err != nil {
		return nil, err
	}
	type box struct {
		f   ingest.FeatureChange
		old bool
		b   [4]float64
	}
	var boxes []box
	ext := [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	for _, f := range feats {
		for _, s := range []struct {
			geo string
			old bool
		}{{string(f.OldBBox), true}, {string(f.NewBBox), false}} {
			b, ok := geoJSONBox(s.geo)
			if !ok {
				continue
			}
			boxes = append(boxes, box{f, s.old, b})
			ext = [4]float64{math.Min(ext[0], b[0]), math.Min(ext[1], b[1]), math.Max(ext[2], b[2]), math.Max(ext[3], b[3])}
		}
	}
	if len(boxes) == 0 {
		return nil, nil
	}
	m.Extent = ext
	// An equirectangular view of the extent, longitudes shrunk by the
	// cosine of its middle latitude, with a margin.
	kx := math.Cos((ext[1] + ext[3]) / 2 * math.Pi / 180)
	w, hgt := math.Max((ext[2]-ext[0])*kx, 1e-9), math.Max(ext[3]-ext[1], 1e-9)
	const margin = 10.0
	s := (mapWidth - 2*margin) / w
	m.Width = mapWidth
	m.Height = math.Min(math.Max(hgt*s+2*margin, 120), 540)
	if hgt*s > m.Height-2*margin {
		s = (m.Height - 2*margin) / hgt
	}
	for _, b := range boxes {
		x0 := margin + (b.b[0]-ext[0])*kx*s
		y0 := margin + (ext[3]-b.b[3])*s
		bw, bh := math.Max((b.b[2]-b.b[0])*kx*s, 2), math.Max((b.b[3]-b.b[1])*s, 2)
		class := "cm-" + kindClass(b.f.Kind)
		if b.old {
			class += " cm-old"
		}
		m.Boxes = append(m.Boxes, changeBox{FeatureID: b.f.FeatureID, Kind: b.f.Kind, Class: class, Old: b.old,
			X: round1(x0), Y: round1(y0), W: round1(bw), H: round1(bh)})
	}
	return m, nil
}

// kindClass is a change kind's CSS class suffix.
func kindClass(kind string) string {
	switch kind {
	case "added", "removed", "attributes":
		return kind
	}
	return "geometry" // geometry, geometry+attributes
}

// geoJSONBox is the bounding box of a GeoJSON geometry's coordinates.
func geoJSONBox(s string) ([4]float64, bool) {
	if s == "" {
		return [4]float64{}, false
	}
	var g struct {
		Coordinates any `json:"coordinates"`
	}
	if json.Unmarshal([]byte(s), &g) != nil {
		return [4]float64{}, false
	}
	b := [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	var walk func(v any)
	walk = func(v any) {
		a, ok := v.([]any)
		if !ok {
			return
		}
		if len(a) >= 2 {
			x, okx := a[0].(float64)
			y, oky := a[1].(float64)
			if okx && oky {
				b = [4]float64{math.Min(b[0], x), math.Min(b[1], y), math.Max(b[2], x), math.Max(b[3], y)}
				return
			}
		}
		for _, e := range a {
			walk(e)
		}
	}
	walk(g.Coordinates)
	return b, b[0] <= b[2] && b[1] <= b[3]
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
