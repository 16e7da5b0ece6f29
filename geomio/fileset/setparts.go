package fileset

import (
	"fmt"
	"strings"

	"github.com/geoingest/geoingest/geomio/internal/core"
)

// CheckSetParts fails when path is the main file of a multi-file set
// read with GDAL (a MapInfo .tab or .mif) and a required part of its
// SetRules entry is not beside it: GDAL would read a .mif without its
// .mid as features with every attribute null, and fail on a .tab without
// its .dat as 'not recognized as a supported file format'. The shapefile
// reader checks its own sidecars.
func CheckSetParts(path string) error {
	r, ok := SetRuleOf(path)
	if !ok || r.Main == ".shp" || len(r.Required) == 0 {
		return nil
	}
	set, err := FindShapefileSet(path)
	if err != nil {
		return &core.Error{File: path, Problem: "read", Err: err}
	}
	if missing := set.Missing(); len(missing) > 0 {
		return &core.Error{File: path, Problem: fmt.Sprintf("missing %s beside the %s (a MapInfo table is uploaded with every part, the same name before the extension)",
			strings.Join(missing, " and "), r.Main)}
	}
	return nil
}
