package geomio

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// The shapefile-set rules, owned here and used by everyone else (the
// readers, the zip extractor, the trigger gate's routes, the local and S3
// object sources). Extensions are compared case-insensitively.
var (
	// ShapefileParts are the files of a shapefile set that make up its
	// content, in the order in which a set's parts are listed and its
	// version token hashes them: the .shp, then its sidecars. A change in
	// any of them is a new version of the set.
	ShapefileParts = []string{".shp", ".shx", ".dbf", ".prj", ".cpg"}
	// RequiredSidecars are the sidecars without which a set is
	// incomplete: it waits for them (and, past its patience, fails).
	RequiredSidecars = []string{".shx", ".dbf"}
	// SidecarSuffixes are the files beside a .shp that never start a job
	// on their own (the trigger gate filters them): the .shp's event
	// does, and its token covers the parts among them.
	SidecarSuffixes = []string{".dbf", ".shx", ".prj", ".cpg", ".qix", ".sbn", ".sbx", ".xml"}
)

// IsShapefile reports whether name (a path or an object key) is a .shp.
func IsShapefile(name string) bool { return strings.EqualFold(path.Ext(name), ".shp") }

// IsSidecar reports whether name's extension is one of SidecarSuffixes.
// A .xml is a sidecar only as a shapefile's metadata (NAME.shp.xml):
// another .xml may be GML.
func IsSidecar(name string) bool {
	if ext := path.Ext(name); strings.EqualFold(ext, ".xml") {
		return IsShapefile(strings.TrimSuffix(name, ext))
	}
	return hasExt(SidecarSuffixes, path.Ext(name)) || hasExt(MapInfoParts, path.Ext(name))
}

// IsRequiredSidecar reports whether ext is one of RequiredSidecars.
func IsRequiredSidecar(ext string) bool { return hasExt(RequiredSidecars, ext) }

// IsShapefilePart reports whether name's extension is one of
// ShapefileParts.
func IsShapefilePart(name string) bool { return hasExt(ShapefileParts, path.Ext(name)) }

func hasExt(exts []string, ext string) bool {
	for _, e := range exts {
		if strings.EqualFold(e, ext) {
			return true
		}
	}
	return false
}

// ShapefileSet is the files of one shapefile set on local disk.
type ShapefileSet struct {
	// Parts maps each part of ShapefileParts that is present (lower-case
	// extension) to its path. ".shp" is always present.
	Parts map[string]string
}

// FindShapefileSet finds the parts of the set of shpPath: the .shp itself,
// and each other extension of ShapefileParts whose file beside it has the
// same base name, both matched case-insensitively. It fails only when the
// directory cannot be read.
func FindShapefileSet(shpPath string) (ShapefileSet, error) {
	set := ShapefileSet{Parts: map[string]string{".shp": shpPath}}
	dir, base := filepath.Split(shpPath)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return set, err
	}
	for _, ext := range ShapefileParts[1:] {
		for _, e := range entries {
			if !e.IsDir() && strings.EqualFold(e.Name(), stem+ext) {
				set.Parts[ext] = filepath.Join(dir, e.Name())
				break
			}
		}
	}
	return set, nil
}

// Paths returns the paths of the parts present, in ShapefileParts order.
func (s ShapefileSet) Paths() []string {
	var ps []string
	for _, ext := range ShapefileParts {
		if p, ok := s.Parts[ext]; ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// Missing returns the RequiredSidecars that are not present, in that
// order.
func (s ShapefileSet) Missing() []string {
	var missing []string
	for _, ext := range RequiredSidecars {
		if _, ok := s.Parts[ext]; !ok {
			missing = append(missing, ext)
		}
	}
	return missing
}
