package localfs

import (
	"strings"

	"github.com/geoingest/geoingest/geomio"
)

// ShapefileSetOf names the multi-file set (a shapefile, a MapInfo table:
// geomio.SetRules) an inbox file belongs to: for a part of a set
// (geomio.SetStem), its path without the set's extension,
// lower-cased, since geomio.FindShapefileSet matches the parts of a set
// case-insensitively; "" for any other file. The inbox
// (queue.InboxOptions.SetOf) delivers a .shp (.tab, .mif) only once every part beside
// it has settled, so that a sidecar still being copied is not read.
func ShapefileSetOf(rel string) string {
	stem, ok := geomio.SetStem(rel)
	if !ok {
		return ""
	}
	return strings.ToLower(stem)
}
