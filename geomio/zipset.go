package geomio

import (
	"fmt"
	"slices"
)

// zipDataset is what a dataset read with GDAL, or a KML document, needs
// to know of the zip it lies in, where it is one layer source among
// several (shapefile sets, GeoJSON files, other datasets).
type zipDataset struct {
	// prefix is put before each of its layers' names ("A.gdb/"): in a
	// zip of several sources, two datasets may each have a layer
	// "parcels", and every layer of an upload needs a name of its own.
	// Empty when the dataset is the zip's one source.
	prefix string
	// layers is the zip's: Options.Layers is matched against the whole
	// zip, not against each dataset.
	layers *zipLayers
	// root is the folder the zip is extracted to: all a dataset in it may
	// read (a MapInfo seamless table's parts, a GML's schema).
	root string
}

// zipLayers matches Options.Layers against all the layers of a zip, as
// each source is opened: a name that no source has is refused once all
// are opened (check).
type zipLayers struct {
	want  []string
	names []string // every layer with geometry seen, in order
}

// pick records the layer names a source has and returns which of them are
// wanted (every one when no layer is asked for).
func (z *zipLayers) pick(name string) bool {
	z.names = append(z.names, name)
	return len(z.want) == 0 || slices.Contains(z.want, name)
}

// check is the error of the zip at zipPath once every source was opened:
// a layer asked for that none has.
func (z *zipLayers) check(zipPath string) error {
	for _, w := range z.want {
		if !slices.Contains(z.names, w) {
			return &Error{File: zipPath, Problem: fmt.Sprintf("no layer %q (the layers with geometry are %s)", w, quoteList(z.names))}
		}
	}
	return nil
}
