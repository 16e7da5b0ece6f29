package localfs

import (
	"path"
	"strings"

	"github.com/geoingest/geoingest/geomio"
)

// ShapefileSetOf names the multi-file set (a shapefile, a MapInfo table:
// geomio.SetRules) an inbox file belongs to: for a part of a set
// (geomio.IsSetPart), its path without the extension,
// lower-cased, since geomio.FindShapefileSet matches the parts of a set
// case-insensitively; "" for any other file. The inbox
// (queue.InboxOptions.SetOf) delivers a .shp (.tab, .mif) only once every part beside
// it has settled, so that a sidecar still being copied is not read.
func ShapefileSetOf(rel string) string {
	if !geomio.IsSetPart(rel) {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(rel, path.Ext(rel)))
}
