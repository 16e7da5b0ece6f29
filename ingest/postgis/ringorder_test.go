package postgis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// ringFile writes 40 squares as x.geojson (the oracle's source name),
// each ring from the vertex and in the direction ring(i) gives (0: from
// its south-west corner, counter-clockwise; 1: reversed; 2: from its
// north-east corner), square 3 with its north-east corner moved when
// moved, and square 7's use "R2" when edited.
func ringFile(t *testing.T, ring func(i int) int, moved, edited bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := range 40 {
		if i > 0 {
			b.WriteByte(',')
		}
		x, y := 13+float64(i%10)*0.002, 52.5+float64(i/10)*0.002
		d := 0.001
		pts := [][2]float64{{x, y}, {x + d, y}, {x + d, y + d}, {x, y + d}}
		if i == 3 && moved {
			pts[2] = [2]float64{x + d*1.02, y + d*1.02}
		}
		switch ring(i) {
		case 1:
			pts = [][2]float64{pts[0], pts[3], pts[2], pts[1]}
		case 2:
			pts = [][2]float64{pts[2], pts[3], pts[0], pts[1]}
		}
		pts = append(pts, pts[0])
		var cs []string
		for _, p := range pts {
			cs = append(cs, fmt.Sprintf("[%g,%g]", p[0], p[1]))
		}
		use := "R1"
		if i == 7 && edited {
			use = "R2"
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"APN":"%07d","use":"%s"},"geometry":{"type":"Polygon","coordinates":[[%s]]}}`,
			i, use, strings.Join(cs, ","))
	}
	b.WriteString("]}")
	path := filepath.Join(t.TempDir(), "x.geojson")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// TestRingOrderIsNotAGeometryChange: a republication that writes every
// ring from another vertex or the other way round (another export tool)
// changed no feature's geometry: the change record says so (one moved
// vertex and one attribute are its only changes), in a diff and in a full
// replace, keyed and not; the rows are rewritten as the new file has them,
// so the current rows are still a full load's. Every feature was recorded
// as a change of geometry (by key, or by overlap without a key).
func TestRingOrderIsNotAGeometryChange(t *testing.T) {
	t.Parallel()
	v1 := ringFile(t, func(int) int { return 0 }, false, false)
	v2 := ringFile(t, func(i int) int { return [4]int{1, 2, 0, 0}[i%4] }, true, true)
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			t.Parallel()
			b, full, empty := setup(t), setup(t), setup(t)
			full.store.FullReplace = true
			ctx := context.Background()
			p := ingest.DefaultParams("parcels")
			if keyed {
				p.Key = []string{"APN"}
			}
			for _, s := range []*bundle{b, full} {
				require.Equal(t, ingest.Written, s.svc.Run(ctx, version(t, v1, "v1", "01", p)).Outcome)
			}
			want := ingest.ChangeCounts{Geometry: 1, Attributes: 1, Unchanged: 38}
			for name, s := range map[string]*bundle{"diff": b, "full replace": full} {
				res := s.svc.Run(ctx, version(t, v2, "v2", "02", p))
				require.NoError(t, res.Err, name)
				require.Equal(t, ingest.Written, res.Outcome, name)
				require.Equal(t, want, res.Changes.Counts, name)
				var kinds string
				require.NoError(t, s.pool.QueryRow(ctx, `SELECT string_agg(kind, ',' ORDER BY kind) FROM feature_changes WHERE job_id = $1`,
					res.JobID).Scan(&kinds))
				require.Equal(t, "attributes,geometry", kinds, name)
			}
			require.NoError(t, empty.svc.Run(ctx, version(t, v2, "full", "01", p)).Err)
			got, gc, _, gs := currentRows(t, b)
			wantRows, wc, _, ws := currentRows(t, empty)
			require.Equal(t, wantRows, got, "the current rows are a full load's: each geometry as the new file writes it")
			require.Equal(t, wc, gc)
			require.Equal(t, ws, gs)
			requireVerified(t, b)
		})
	}
}

// scaled are 40 squares' properties, with a value written at the scale
// wide(i) says (1.50 or 1.5; 1000.0 or 1000), rate as written by rate,
// and square 7's use "R2" when edited.
func scaled(wide func(i int) bool, edited bool, rate func(v string) string) string {
	return collection("", squareTexts(40, func(i int) string {
		val, area := `1.5`, `1000`
		if wide(i) {
			val, area = `1.50`, `1000.0`
		}
		use := "R1"
		if i == 7 && edited {
			use = "R2"
		}
		return fmt.Sprintf(`{"APN":"%07d","use":"%s","rate":%s,"sqft":%s,"code":"1.50"}`, i, use, rate(val), area)
	})...)
}

// TestNumberScaleIsNotAnAttributeChange: a republication that writes
// 1.50 as 1.5 and 1000.0 as 1000 changed no feature's attributes (one
// edit is its only change), in a diff and in a full replace, keyed and
// not; a number become a string is still a change. The rows are rewritten as the new
// file has them: the current rows are a full load's. Half the features
// were recorded as attributes changes.
func TestNumberScaleIsNotAnAttributeChange(t *testing.T) {
	t.Parallel()
	number := func(v string) string { return v }
	v1 := write(t, "x.geojson", scaled(func(int) bool { return true }, false, number))
	v2 := write(t, "x.geojson", scaled(func(i int) bool { return i%2 == 0 }, true, number))
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			t.Parallel()
			b, full, empty := setup(t), setup(t), setup(t)
			full.store.FullReplace = true
			ctx := context.Background()
			p := ingest.DefaultParams("parcels")
			if keyed {
				p.Key = []string{"APN"}
			}
			for _, s := range []*bundle{b, full} {
				require.Equal(t, ingest.Written, s.svc.Run(ctx, version(t, v1, "v1", "01", p)).Outcome)
			}
			for name, s := range map[string]*bundle{"diff": b, "full replace": full} {
				res := s.svc.Run(ctx, version(t, v2, "v2", "02", p))
				require.NoError(t, res.Err, name)
				require.Equal(t, ingest.Written, res.Outcome, name)
				require.Equal(t, ingest.ChangeCounts{Attributes: 1, Unchanged: 39}, res.Changes.Counts, name)
			}
			require.NoError(t, empty.svc.Run(ctx, version(t, v2, "full", "01", p)).Err)
			got, gc, _, gs := currentRows(t, b)
			want, wc, _, ws := currentRows(t, empty)
			require.Equal(t, want, got, "the current rows are a full load's: each value as the new file writes it")
			require.Equal(t, wc, gc)
			require.Equal(t, ws, gs)
			requireVerified(t, b)

			// A number that becomes a string is a change.
			path := write(t, "x.geojson", scaled(func(i int) bool { return i%2 == 0 }, true, func(v string) string {
				if v == "1.5" {
					return `"1.5"`
				}
				return v
			}))
			j3 := version(t, path, "v3", "03", p)
			j3.Guards = ingest.Guards{Off: true} // the drift guard would hold it (a number become a string)
			res := b.svc.Run(ctx, j3)
			require.NoError(t, res.Err)
			require.Equal(t, ingest.Written, res.Outcome)
			require.Equal(t, ingest.ChangeCounts{Attributes: 20, Unchanged: 20}, res.Changes.Counts)
		})
	}
}
