package core

import (
	"fmt"
	"math"

	"github.com/geoingest/geoingest/geomio/lonlat"
	"github.com/paulmach/orb"
	"github.com/twpayne/go-geom"
)

// FromOrb converts a decoded GeoJSON geometry to the core go-geom model,
// normalised as Feature.Geom documents: XY only, Polygon promoted to
// MultiPolygon, empty parts dropped, and nil for an empty geometry.
func FromOrb(g orb.Geometry, srid int) (geom.T, error) {
	t, err := orbToGeom(g, true)
	if err != nil || t == nil {
		return nil, err
	}
	return SetSRID(t, srid), nil
}

func orbToGeom(g orb.Geometry, promote bool) (geom.T, error) {
	switch g := g.(type) {
	case nil:
		return nil, nil
	case orb.Point:
		if err := checkFinite(g); err != nil {
			return nil, err
		}
		return geom.NewPointFlat(geom.XY, []float64{g[0], g[1]}), nil
	case orb.MultiPoint:
		if len(g) == 0 {
			return nil, nil
		}
		flat, err := flatPoints(g)
		if err != nil {
			return nil, err
		}
		return geom.NewMultiPointFlat(geom.XY, flat), nil
	case orb.LineString:
		if len(g) == 0 {
			return nil, nil
		}
		flat, err := flatPoints(g)
		if err != nil {
			return nil, err
		}
		return geom.NewLineStringFlat(geom.XY, flat), nil
	case orb.MultiLineString:
		var flat []float64
		var ends []int
		for _, ls := range g {
			if len(ls) == 0 {
				continue
			}
			f, err := flatPoints(ls)
			if err != nil {
				return nil, err
			}
			flat = append(flat, f...)
			ends = append(ends, len(flat))
		}
		if len(ends) == 0 {
			return nil, nil
		}
		return geom.NewMultiLineStringFlat(geom.XY, flat, ends), nil
	case orb.Ring:
		return orbToGeom(orb.Polygon{g}, promote)
	case orb.Polygon:
		return polygonsToGeom([]orb.Polygon{g})
	case orb.MultiPolygon:
		return polygonsToGeom(g)
	case orb.Collection:
		gc := geom.NewGeometryCollection()
		for _, c := range g {
			ct, err := orbToGeom(c, false)
			if err != nil {
				return nil, err
			}
			if ct == nil {
				continue
			}
			if err := gc.Push(ct); err != nil {
				return nil, err
			}
		}
		if gc.NumGeoms() == 0 {
			return nil, nil
		}
		return gc, nil
	case orb.Bound:
		return orbToGeom(g.ToPolygon(), promote)
	default:
		return nil, fmt.Errorf("unsupported geometry type %T", g)
	}
}

// polygonsToGeom builds a MultiPolygon, dropping empty rings and polygons.
// A polygon whose exterior ring is empty is dropped with its holes. A
// non-empty ring must be a linear ring as RFC 7946 defines it (closed, at
// least four positions): PostGIS refuses anything else when it parses the
// geometry, and it is the file's fault, so it is reported here, per
// feature, rather than as an error from the database.
func polygonsToGeom(ps []orb.Polygon) (geom.T, error) {
	var flat []float64
	var endss [][]int
	for i, p := range ps {
		if len(p) == 0 || len(p[0]) == 0 {
			continue
		}
		var ends []int
		for j, r := range p {
			if len(r) == 0 {
				continue
			}
			if len(r) < 4 {
				return nil, fmt.Errorf("polygon %d ring %d has %d positions; a linear ring needs at least 4", i, j, len(r))
			}
			if r[0] != r[len(r)-1] {
				return nil, fmt.Errorf("polygon %d ring %d is not closed (its first and last positions differ)", i, j)
			}
			f, err := flatPoints(r)
			if err != nil {
				return nil, err
			}
			flat = append(flat, f...)
			ends = append(ends, len(flat))
		}
		endss = append(endss, ends)
	}
	if len(endss) == 0 {
		return nil, nil
	}
	return geom.NewMultiPolygonFlat(geom.XY, flat, endss), nil
}

func flatPoints[P ~[]orb.Point](ps P) ([]float64, error) {
	flat := make([]float64, 0, 2*len(ps))
	for _, p := range ps {
		if err := checkFinite(p); err != nil {
			return nil, err
		}
		flat = append(flat, p[0], p[1])
	}
	return flat, nil
}

func checkFinite(p orb.Point) error {
	if math.IsNaN(p[0]) || math.IsNaN(p[1]) || math.IsInf(p[0], 0) || math.IsInf(p[1], 0) {
		return fmt.Errorf("non-finite coordinate")
	}
	return nil
}

// SetSRID sets the SRID on every go-geom type the readers produce.
func SetSRID(t geom.T, srid int) geom.T {
	switch g := t.(type) {
	case *geom.Point:
		return g.SetSRID(srid)
	case *geom.MultiPoint:
		return g.SetSRID(srid)
	case *geom.LineString:
		return g.SetSRID(srid)
	case *geom.MultiLineString:
		return g.SetSRID(srid)
	case *geom.Polygon:
		return g.SetSRID(srid)
	case *geom.MultiPolygon:
		return g.SetSRID(srid)
	case *geom.GeometryCollection:
		return g.SetSRID(srid)
	}
	return t
}

// CheckLonLat returns an error if some coordinate of t cannot be a
// longitude/latitude pair (lonlat.Within, with lonlat.Slack).
func CheckLonLat(t geom.T) error {
	if t == nil {
		return nil
	}
	if c, ok := t.(*geom.GeometryCollection); ok {
		for _, g := range c.Geoms() {
			if err := CheckLonLat(g); err != nil {
				return err
			}
		}
		return nil
	}
	if lonlat.Within(t.FlatCoords(), t.Stride(), lonlat.Slack) {
		return nil
	}
	b := t.Bounds()
	return fmt.Errorf("coordinate (%g %g)..(%g %g) outside longitude/latitude range", b.Min(0), b.Min(1), b.Max(0), b.Max(1))
}
