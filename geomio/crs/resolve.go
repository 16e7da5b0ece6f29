//go:build cgo

package crs

import (
	"github.com/geoingest/geoingest/geomio/internal/hint"

	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Resolve reads the CRS given as text (a .prj's WKT, a GeoJSON crs name such
// as "urn:ogc:def:crs:EPSG::27700", "EPSG:3857", an opengis.net URL) with
// PROJ and says what to transform it with (see the package comment). A
// leading UTF-8 byte order mark is dropped: PROJ refuses one. Problems with
// the CRS come back as *InputError; any other error is PROJ's environment
// (no database). Resolve is safe for concurrent use: each call has its own
// PROJ context.
func Resolve(text string) (CRS, error) {
	c := CRS{Text: text}
	text = strings.TrimSpace(strings.TrimPrefix(text, "\uFEFF"))
	if text == "" {
		return c, &InputError{Msg: "the CRS is empty; " + overrideHint()}
	}
	p, err := newCtx()
	if err != nil {
		return c, err
	}
	defer p.close()
	o, err := p.create(text, looksLikeWKT(text))
	if err != nil {
		return c, &InputError{Msg: fmt.Sprintf("PROJ cannot read the CRS %q: %v; %s", abbreviate(text), err, overrideHint())}
	}
	defer o.destroy()
	if !p.isCRS(o) {
		return c, &InputError{Msg: fmt.Sprintf("%q is not a coordinate reference system; %s", abbreviate(text), overrideHint())}
	}
	return p.resolve(o, c)
}

// looksLikeWKT reports whether text starts like WKT (KEYWORD[ or KEYWORD().
func looksLikeWKT(text string) bool {
	i := strings.IndexAny(text, "[(")
	if i <= 0 {
		return false
	}
	for _, r := range text[:i] {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r == '_' || r == ' ') {
			return false
		}
	}
	return true
}

func abbreviate(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// resolve resolves the CRS o into c.
func (p *projCtx) resolve(o pj, c CRS) (CRS, error) {
	switch p.typ(o) {
	case typeCompound:
		// A horizontal CRS with heights: the heights are dropped (readers
		// flatten to XY), so the horizontal part is the CRS.
		h := p.subCRS(o, 0)
		if h.p == nil {
			return c, &InputError{Msg: fmt.Sprintf("compound CRS %q has no horizontal part; %s", p.name(o), overrideHint())}
		}
		defer h.destroy()
		return p.resolve(h, c)
	case typeBound:
		// WKT 1 TOWGS84: a null one on a datum that lies on the WGS 84 or
		// GRS 80 ellipsoid says nothing PROJ does not do anyway; any other
		// is the file's own transformation to WGS 84, kept by keeping the
		// whole definition.
		base := p.sourceCRS(o)
		if base.p == nil {
			return c, &InputError{Msg: fmt.Sprintf("bound CRS %q has no base CRS; %s", p.name(o), overrideHint())}
		}
		defer base.destroy()
		if allZero(p.boundParams(o)) && p.onWGS84Ellipsoid(base) {
			return p.resolve(base, c)
		}
		return p.custom(o, c)
	case typeGeog2D, typeGeog3D, typeProjected, typeGeodetic:
	default:
		return c, &InputError{Msg: fmt.Sprintf("%q is not a horizontal CRS (geographic or projected); %s", p.name(o), overrideHint())}
	}
	c.Name = p.name(o)
	if auth, code := p.id(o); strings.EqualFold(auth, "EPSG") {
		if n, err := strconv.Atoi(code); err == nil && n > 0 {
			if db, err := p.epsg(n); err == nil {
				defer db.destroy()
				if p.same(o, db) {
					c.Method, c.EPSG, c.Confidence = Authority, n, 100
					return p.checkTransformation(db, c)
				}
			}
		}
	}
	if db, code, conf := p.identifyEPSG(o); db.p != nil {
		defer db.destroy()
		c.Method, c.EPSG, c.Confidence = Identified, code, conf
		return p.checkTransformation(db, c)
	}
	return p.custom(o, c)
}

// TransformationIn returns the transformation to WGS 84 that PROJ uses
// for coordinates of c (a CRS Resolve accepted) within the bounds xmin,
// ymin, xmax, ymax (in c's units, easting first), and a more accurate one
// there that needs a grid not installed (nil when none). Resolve looks at
// the CRS's whole area of use, where the best operation may be another
// region's (NAD27's is Canada's); PostGIS picks per coordinate, as this
// does for the bounds.
func TransformationIn(c CRS, xmin, ymin, xmax, ymax float64) (string, *GridOperation, error) {
	p, err := newCtx()
	if err != nil {
		return "", nil, err
	}
	defer p.close()
	var src pj
	switch {
	case c.Method == Custom && c.Definition != "":
		src, err = p.create(c.Definition, true)
	case c.EPSG > 0:
		src, err = p.epsg(c.EPSG)
	default:
		return "", nil, fmt.Errorf("no CRS to transform from")
	}
	if err != nil {
		return "", nil, err
	}
	defer src.destroy()
	n, err := p.normalized(src)
	if err != nil {
		return "", nil, err
	}
	defer n.destroy()
	a := p.lonLatArea(n, xmin, ymin, xmax, ymax)
	if a == nil {
		return "", nil, fmt.Errorf("PROJ cannot transform the bounds to longitudes and latitudes: %s", p.lastError())
	}
	dst, err := p.epsg(4326)
	if err != nil {
		return "", nil, err
	}
	defer dst.destroy()
	// From the CRS as it is, as Resolve does: the names do not start
	// with an axis order change.
	name, ballpark, accuracy, err := p.bestOperation(src, dst, a)
	if err != nil {
		return "", nil, err
	}
	if ballpark {
		accuracy = -1
	}
	return name, p.betterOperation(src, dst, accuracy, a), nil
}

// EPSGName returns the name of EPSG:code in PROJ's database ("OSGB36 /
// British National Grid"), for reports that give the code.
func EPSGName(code int) (string, error) {
	p, err := newCtx()
	if err != nil {
		return "", err
	}
	defer p.close()
	o, err := p.epsg(code)
	if err != nil {
		return "", err
	}
	defer o.destroy()
	return p.name(o), nil
}

// EPSGDefinition returns PROJ's definition of EPSG:code as WKT (WKT 2019,
// or WKT 1 when that does not fit in spatial_ref_sys) and as a PROJ.4
// string (or ""), for registering an EPSG CRS that PostGIS's
// spatial_ref_sys, older than PROJ's database, lacks.
func EPSGDefinition(code int) (wkt, projString string, err error) {
	p, err := newCtx()
	if err != nil {
		return "", "", err
	}
	defer p.close()
	o, err := p.epsg(code)
	if err != nil {
		return "", "", err
	}
	defer o.destroy()
	wkt = p.wkt(o, "WKT2_2019")
	if wkt == "" || len(wkt) > maxDefinition {
		wkt = p.wkt(o, "WKT1_GDAL")
	}
	if wkt == "" || len(wkt) > maxDefinition {
		return "", "", fmt.Errorf("EPSG:%d: no WKT of at most %d characters", code, maxDefinition)
	}
	if projString = p.projString(o); len(projString) > maxDefinition {
		projString = ""
	}
	return wkt, projString, nil
}

// same reports whether a and b are the same CRS once both have easting
// first (several national grids are northing-first in EPSG, never in a
// .prj).
func (p *projCtx) same(a, b pj) bool {
	na, err := p.normalized(a)
	if err != nil {
		return false
	}
	defer na.destroy()
	nb, err := p.normalized(b)
	if err != nil {
		return false
	}
	defer nb.destroy()
	return p.equivalent(na, nb)
}

// identifyEPSG finds the EPSG CRS equivalent to o the way GDAL accepts
// one: the only candidate at 90 % or more; else the best candidate at 70 %
// or more (not deprecated ones, unless only deprecated ones qualify) that
// is equivalent to o. Axis order is normalised first: o is identified as
// it is and with its axes swapped, and each EPSG code keeps the higher of
// its two confidences. It returns a nil pj when there is none.
func (p *projCtx) identifyEPSG(o pj) (pj, int, int) {
	cands := p.identify(o)
	if sw := p.swapped(o); sw.p != nil {
		seen := map[int]int{}
		for i, cd := range cands {
			seen[cd.code] = i
		}
		for _, cd := range p.identify(sw) {
			if i, ok := seen[cd.code]; ok {
				cands[i].confidence = max(cands[i].confidence, cd.confidence)
				cd.crs.destroy()
				continue
			}
			seen[cd.code] = len(cands)
			cands = append(cands, cd)
		}
		sw.destroy()
		sort.SliceStable(cands, func(i, j int) bool { return cands[i].confidence > cands[j].confidence })
	}
	chosen := -1
	high := -1
	nHigh := 0
	for i, cd := range cands {
		if cd.confidence >= 90 && cd.code > 0 {
			high = i
			nHigh++
		}
	}
	if nHigh == 1 {
		chosen = high
	}
	for pass := 0; pass < 2 && chosen < 0; pass++ {
		for i, cd := range cands {
			if cd.confidence < 70 || cd.code <= 0 || (pass == 0 && p.deprecated(cd.crs)) {
				continue
			}
			if p.same(o, cd.crs) {
				chosen = i
				break
			}
		}
	}
	for i, cd := range cands {
		if i != chosen {
			cd.crs.destroy()
		}
	}
	if chosen < 0 {
		return pj{}, 0, 0
	}
	return cands[chosen].crs, cands[chosen].code, cands[chosen].confidence
}

// custom makes c the definition o itself.
func (p *projCtx) custom(o pj, c CRS) (CRS, error) {
	c.Method, c.EPSG, c.Confidence = Custom, 0, 0
	c.Name = p.name(o)
	n, err := p.normalized(o)
	if err != nil {
		return c, &InputError{Msg: fmt.Sprintf("PROJ cannot put the axes of %q in easting, northing order: %v; %s", c.Name, err, overrideHint())}
	}
	defer n.destroy()
	c.Definition = p.wkt(n, "WKT2_2019")
	if c.Definition == "" || len(c.Definition) > maxDefinition {
		c.Definition = p.wkt(n, "WKT1_GDAL")
	}
	if c.Definition == "" || len(c.Definition) > maxDefinition {
		return c, &InputError{Msg: fmt.Sprintf("the definition of %q does not fit in spatial_ref_sys (%d characters of WKT at most); %s", c.Name, maxDefinition, overrideHint())}
	}
	if s := p.projString(n); len(s) <= maxDefinition {
		c.PROJString = s
	}
	return p.checkTransformation(n, c)
}

// checkTransformation finds PROJ's preferred transformation from src to
// WGS 84 (EPSG:4326), records its name in c, and refuses a ballpark one on
// a datum whose ellipsoid is not WGS 84's or GRS 80's. When a more
// accurate transformation needs a grid that is not installed, c.Better
// says which (and a refusal says how to install it).
func (p *projCtx) checkTransformation(src pj, c CRS) (CRS, error) {
	dst, err := p.epsg(4326)
	if err != nil {
		return c, err
	}
	defer dst.destroy()
	name, ballpark, accuracy, err := p.bestOperation(src, dst, nil)
	if ballpark || err != nil {
		accuracy = -1
	}
	c.Better = p.betterOperation(src, dst, accuracy, nil)
	if err != nil {
		if c.Better != nil {
			return c, &InputError{Msg: fmt.Sprintf("PROJ cannot transform %s to WGS 84 until a grid is installed: the transformation %s; %s, and retry; or %s",
				c, c.Better, c.Better.Fix(), overrideHint())}
		}
		return c, &InputError{Msg: fmt.Sprintf("PROJ cannot transform %s to WGS 84: %v; %s", c, err, overrideHint())}
	}
	c.Transformation = name
	if ballpark && !p.onWGS84Ellipsoid(src) {
		if c.Better != nil {
			return c, &InputError{Msg: fmt.Sprintf(
				"missing grid: the CRS is %s, on datum %q, and its accurate transformation to WGS 84, %s; "+
					"without it PROJ has only a ballpark transformation (%q), which ignores the datum shift and is silently off by up to hundreds of metres, so geoingest refuses it. "+
					"To fix: %s, and retry; or %s",
				c, p.datumName(src), c.Better, name, c.Better.Fix(), overrideHint())}
		}
		return c, &InputError{Msg: fmt.Sprintf(
			"ballpark transformation: the CRS is %s, on datum %q, and PROJ knows no transformation from it to WGS 84 but a ballpark one (%q), "+
				"which ignores the datum shift and is silently off by up to hundreds of metres, so geoingest refuses it; "+
				"if you know an EPSG CRS for these coordinates that PROJ can transform, give it %s",
			c, p.datumName(src), name, hint.Give(hint.CRS))}
	}
	return c, nil
}

// onWGS84Ellipsoid reports whether o's ellipsoid is WGS 84's or GRS 80's,
// the ellipsoids of WGS 84 and of the datums (NAD83, ETRS89, GDA94, ...)
// that coincide with it within a metre or two.
func (p *projCtx) onWGS84Ellipsoid(o pj) bool {
	a, invf, ok := p.ellipsoid(o)
	if !ok {
		return false
	}
	return a == 6378137 && (math.Abs(invf-298.257223563) < 1e-6 || math.Abs(invf-298.257222101) < 1e-6)
}

func allZero(vs []float64) bool {
	for _, v := range vs {
		if v != 0 {
			return false
		}
	}
	return true
}
