package core

import (
	"fmt"
	"slices"
)

// Archive is what a dataset read with GDAL, or a KML document, needs
// to know of the zip it lies in, where it is one layer source among
// several (shapefile sets, GeoJSON files, other datasets).
type Archive struct {
	// prefix is put before each of its layers' names ("A.gdb/"): in a
	// zip of several sources, two datasets may each have a layer
	// "parcels", and every layer of an upload needs a name of its own.
	// Empty when the dataset is the zip's one source.
	Prefix string
	// layers is the zip's: Options.Layers is matched against the whole
	// zip, not against each dataset.
	Layers *ArchiveLayers
	// root is the folder the zip is extracted to: all a dataset in it may
	// read (a MapInfo seamless table's parts, a GML's schema).
	Root string
}

// ArchiveLayers matches Options.Layers against all the layers of a zip, as
// each source is opened: a name that no source has is refused once all
// are opened (check).
type ArchiveLayers struct {
	Want  []string
	names []string // every layer with geometry seen, in order
}

// Pick records the layer names a source has and returns which of them are
// wanted (every one when no layer is asked for).
func (z *ArchiveLayers) Pick(name string) bool {
	z.names = append(z.names, name)
	return len(z.Want) == 0 || slices.Contains(z.Want, name)
}

// Check is the error of the zip at zipPath once every source was opened:
// a layer asked for that none has.
func (z *ArchiveLayers) Check(zipPath string) error {
	for _, w := range z.Want {
		if !slices.Contains(z.names, w) {
			return &Error{File: zipPath, Problem: fmt.Sprintf("no layer %q (the layers with geometry are %s)", w, QuoteList(z.names))}
		}
	}
	return nil
}
