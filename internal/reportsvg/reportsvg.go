// Package reportsvg draws an area report (ingest.Report) as an SVG
// choropleth map: presentation, kept out of the domain.
package reportsvg

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/geoingest/geoingest/ingest"
)

// svgPalette is a five-class sequential palette (ColorBrewer YlGnBu),
// light for a low share of the unit covered by parcels, dark for a high
// one.
var svgPalette = []string{"#ffffcc", "#a1dab4", "#41b6c4", "#2c7fb8", "#253494"}

// Write writes the report r as an SVG choropleth map: every admin unit
// shaded by the share of its area that the report gives to parcels
// (parcel area / unit area, in five quantile classes), with a legend, the report's total, what is in no unit and the
// admin check, and a title naming the method, the pipeline version and
// the time. Units that overlap another are outlined in red. The map is
// equirectangular, scaled by the cosine of the middle latitude so that
// shapes look right away from the equator. The report must have been run
// with ingest.AreaQuery.Shapes. The file is plain SVG 1.1 with no script, fonts
// or external reference.
func Write(w io.Writer, r *ingest.Report) error {
	const (
		width   = 1000.0
		mapW    = 700.0
		margin  = 20.0
		headerH = 70.0
	)
	var units []ingest.UnitCell
	xmin, ymin, xmax, ymax := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, u := range r.Units {
		if u.UnitID == 0 || u.Path == "" {
			continue
		}
		units = append(units, u)
		xmin, ymin = math.Min(xmin, u.XMin), math.Min(ymin, u.YMin)
		xmax, ymax = math.Max(xmax, u.XMax), math.Max(ymax, u.YMax)
	}
	// cell is what the report's method gives the unit.
	cell := func(u ingest.UnitCell) (int64, float64) {
		if r.Method == ingest.MethodIntersection {
			return u.IntParcels, u.IntAreaM2
		}
		return u.PosParcels, u.PosAreaM2
	}
	share := func(u ingest.UnitCell) float64 {
		if _, a := cell(u); u.UnitAreaM2 > 0 {
			return a / u.UnitAreaM2
		}
		return 0
	}
	// Five quantile classes: each holds about a fifth of the units, so
	// that a layer whose shares cluster still shows its differences.
	shares := make([]float64, 0, len(units))
	for _, u := range units {
		shares = append(shares, share(u))
	}
	sort.Float64s(shares)
	breaks := make([]float64, len(svgPalette)+1) // class k is [breaks[k], breaks[k+1]]
	if len(shares) > 0 {
		for k := range breaks {
			breaks[k] = shares[min(k*len(shares)/len(svgPalette), len(shares)-1)]
		}
		breaks[len(svgPalette)] = shares[len(shares)-1]
	}
	class := func(v float64) int {
		c := 0
		for k := 1; k < len(svgPalette); k++ {
			if v >= breaks[k] {
				c = k
			}
		}
		return c
	}
	overlapping := map[int64]bool{}
	if r.Check != nil {
		for _, o := range r.Check.Overlaps {
			overlapping[o.UnitA], overlapping[o.UnitB] = true, true
		}
	}

	// Map frame: lon * cos(mid latitude) by -lat, fitted into mapW wide.
	mapH := 400.0
	k, sx, sy := 1.0, 1.0, 1.0
	if len(units) > 0 {
		k = math.Cos((ymin + ymax) / 2 * math.Pi / 180)
		dx, dy := (xmax-xmin)*k, ymax-ymin
		if dx <= 0 || dy <= 0 {
			dx, dy = 1, 1
		}
		s := mapW / dx
		mapH = math.Min(dy*s, 900)
		s = math.Min(s, mapH/dy)
		sx, sy = s*k, s
	}
	legendH := 330.0
	height := headerH + math.Max(mapH, legendH) + 2*margin

	b := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	esc := html.EscapeString
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="DejaVu Sans, Arial, Helvetica, sans-serif">`+"\n",
		width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	what := "parcel area by point on surface"
	if r.Method == ingest.MethodIntersection {
		what = "parcel area by intersection"
	}
	version := r.PipelineVersion
	if version == "" {
		version = "none"
	}
	p(`<text x="%.0f" y="32" font-size="20" font-weight="bold">%s</text>`+"\n", margin,
		esc(fmt.Sprintf("Share of each admin unit covered by parcels (%s)", what)))
	p(`<text x="%.0f" y="56" font-size="13" fill="#444">%s</text>`+"\n", margin,
		esc(fmt.Sprintf("geoingest · pipeline %s version %s · admin key %q · %s", ingest.Pipeline, version, r.AdminKey,
			r.GeneratedAt.UTC().Format("2006-01-02 15:04:05 UTC"))))

	// The units.
	p(`<g transform="translate(%.3f %.3f) scale(%.6f %.6f) translate(%.9f %.9f)" stroke="#555" stroke-width="0.6" stroke-linejoin="round">`+"\n",
		margin, headerH+margin, sx, sy, -xmin, ymax)
	for _, u := range units {
		v := share(u)
		stroke := ""
		if overlapping[u.UnitID] {
			stroke = ` stroke="#d7191c" stroke-width="2"`
		}
		n, a := cell(u)
		p(`<path d="%s" fill="%s" fill-rule="evenodd" vector-effect="non-scaling-stroke"%s><title>%s</title></path>`+"\n",
			u.Path, svgPalette[class(v)], stroke,
			esc(fmt.Sprintf("%s (unit %d): %d parcels, %s m², %.1f %% of the unit", u.AdminUnit, u.UnitID, n, groupDigits(math.Round(a)), 100*v)))
	}
	p("</g>\n")

	// The legend.
	lx, ly := margin+mapW+30, headerH+margin+10
	p(`<g font-size="13">` + "\n")
	p(`<text x="%.0f" y="%.0f" font-weight="bold">Parcel area / unit area</text>`+"\n", lx, ly)
	prec := 1 // decimals of the legend's percentages: enough to tell the classes apart
	if spread := 100 * (breaks[len(breaks)-1] - breaks[0]); spread > 0 {
		prec = min(max(1, int(math.Ceil(-math.Log10(spread/50)))), 4)
	}
	for i, c := range svgPalette {
		lo, hi := breaks[i], breaks[i+1]
		y := ly + 14 + float64(i)*24
		p(`<rect x="%.0f" y="%.0f" width="28" height="18" fill="%s" stroke="#555" stroke-width="0.6"/>`+"\n", lx, y, c)
		p(`<text x="%.0f" y="%.0f">%.*f – %.*f %%</text>`+"\n", lx+38, y+14, prec, 100*lo, prec, 100*hi)
	}
	y := ly + 14 + float64(len(svgPalette))*24 + 24
	line := func(s string, attrs string) {
		p(`<text x="%.0f" y="%.0f"%s>%s</text>`+"\n", lx, y, attrs, esc(s))
		y += 20
	}
	indent := func(s string) {
		p(`<text x="%.0f" y="%.0f">%s</text>`+"\n", lx+12, y, esc(s))
		y += 20
	}
	line(fmt.Sprintf("%d admin units", len(units)), "")
	line(fmt.Sprintf("Total: %d parcels,", r.Total.Parcels), "")
	indent(fmt.Sprintf("%s ha", groupDigits(math.Round(r.Total.AreaHa))))
	line(fmt.Sprintf("In no unit: %d parcels,", r.Unassigned.Parcels), "")
	indent(fmt.Sprintf("%s m²", groupDigits(math.Round(r.Unassigned.AreaM2))))
	if r.Reconciled {
		line("Rows add up to the total: yes", ` fill="#1a7f37"`)
	} else {
		line(fmt.Sprintf("Rows add up to the total: NO (%+.1f m²)", r.Difference), ` fill="#d7191c"`)
	}
	if r.Check != nil {
		if r.Check.OK {
			line("Admin layer check: ok", ` fill="#1a7f37"`)
		} else {
			line(fmt.Sprintf("Admin layer check: %d problems", len(r.Check.Problems)), ` fill="#d7191c" font-weight="bold"`)
			line(fmt.Sprintf("%d duplicate keys, %d overlaps,", len(r.Check.DuplicateKeys), len(r.Check.Overlaps)), ` fill="#d7191c"`)
			line(fmt.Sprintf("%d parcels in no unit", r.Check.Gaps.Parcels), ` fill="#d7191c"`)
			if len(r.Check.Overlaps) > 0 {
				line("(overlapping units outlined in red)", ` fill="#d7191c"`)
			}
		}
	}
	p("</g>\n</svg>\n")
	return b.Flush()
}

// groupDigits prints an integral float with thin spaces between groups of
// three digits.
func groupDigits(v float64) string {
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var out []string
	for len(s) > 3 {
		out = append([]string{s[len(s)-3:]}, out...)
		s = s[:len(s)-3]
	}
	out = append([]string{s}, out...)
	sign := ""
	if v < 0 {
		sign = "-"
	}
	return sign + strings.Join(out, "\u2009")
}
