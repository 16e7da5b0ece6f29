package ingest

import (
	"github.com/geoingest/geoingest/geomio"
)

// LogLayers returns a LayerReader of r: it remembers every layer r
// yields a feature of, as r last described it (Layer's counts, such as
// Linearised and DroppedZM, are final once the layer's last feature is read).
func LogLayers(r geomio.Reader) LayerReader { return &layerLog{Reader: r} }

// layerLog is the LayerReader LogLayers returns.
type layerLog struct {
	geomio.Reader
	layers []geomio.Layer
}

func (l *layerLog) Next() bool {
	if !l.Reader.Next() {
		return false
	}
	if name := l.Reader.Feature().Layer; len(l.layers) == 0 || l.layers[len(l.layers)-1].Name != name {
		l.layers = append(l.layers, l.Reader.Layer())
	} else if lay, last := l.Reader.Layer(), &l.layers[len(l.layers)-1]; lay.Linearised != last.Linearised || lay.DroppedZM != last.DroppedZM {
		*last = lay
	}
	return true
}

// Layers returns the layers read so far, in order.
func (l *layerLog) Layers() []geomio.Layer { return l.layers }

// LayerCRS is the CRS one layer of a job was read in.
type LayerCRS struct {
	Layer string `json:"layer"`
	// Method is how it was found: authority, identified, custom, override,
	// default or none (see migration 0004).
	Method string `json:"method"`
	// SRID is what PostGIS transformed with: the EPSG code, or for a
	// custom CRS the SRID geoingest registered it under.
	SRID           int    `json:"srid"`
	EPSG           int    `json:"epsg,omitempty"`
	Confidence     *int   `json:"confidence,omitempty"`
	Name           string `json:"name,omitempty"`
	Definition     string `json:"definition,omitempty"`
	Transformation string `json:"transformation,omitempty"`
	// SourceText is the CRS as the file gave it (the .prj, the crs member).
	SourceText string `json:"source_text,omitempty"`
	// GeometryField is the geometry field read when the layer has several
	// (GML); "" otherwise.
	GeometryField string `json:"geometry_field,omitempty"`
	// LinearisedCurves and DroppedZM count the layer's features whose
	// curves were approximated by line segments, and whose Z or M
	// coordinates were dropped (geomio.Layer).
	LinearisedCurves int64 `json:"linearised_curves"`
	DroppedZM        int64 `json:"dropped_zm"`
}
