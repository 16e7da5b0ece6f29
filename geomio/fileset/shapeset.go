package fileset

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
	return hasExt(SidecarSuffixes, path.Ext(name)) || hasExt(MapInfoParts, path.Ext(name)) || hasExt(GMLSchemaParts, path.Ext(name))
}

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

// GMLSchemaParts are the files that may go beside a GML file (NAME.gml,
// NAME.xml) and describe its layers: its application schema (.xsd) or
// GDAL's own schema file (.gfs). They never start a job on their own
// (IsSidecar), are optional parts of the GML file's set (SetRules), and
// are read with it (gmlschema.go).
var GMLSchemaParts = []string{".xsd", ".gfs"}

// SetRule is a format uploaded as several files beside one another: the
// main file, whose event starts the job, and the parts that go with it.
// The shapefile's rule is the first; MapInfo's TAB (.tab with its .dat,
// .map and .id) and MIF (.mif with its .mid) follow the same rules: the
// job key covers every part present, and a set missing a required part
// waits for it.
type SetRule struct {
	// Main is the main file's extension (lower case).
	Main string
	// Parts are the other parts, in the order in which a set's parts are
	// listed and its version token hashes them (after the main file).
	Parts []string
	// Required are the parts without which the set is incomplete.
	Required []string
}

// SetRules are the multi-file formats.
var SetRules = []SetRule{
	{Main: ".shp", Parts: ShapefileParts[1:], Required: RequiredSidecars},
	{Main: ".tab", Parts: []string{".dat", ".map", ".id"}, Required: []string{".dat", ".map", ".id"}},
	{Main: ".mif", Parts: []string{".mid"}, Required: []string{".mid"}},
	// A GML file's schema beside it is optional: a lone .gml never
	// waits, and one uploaded with its .xsd (or .gfs) is read with it.
	{Main: ".gml", Parts: GMLSchemaParts},
	{Main: ".xml", Parts: GMLSchemaParts},
	{Main: ".gml.gz", Parts: GMLSchemaParts},
	{Main: ".xml.gz", Parts: GMLSchemaParts},
}

// SetRuleOf returns the rule of name (a path or an object key) when it is
// the main file of a multi-file format: its name ends in the rule's Main
// (compared case-insensitively; a Main may have two extensions, as
// .gml.gz).
func SetRuleOf(name string) (SetRule, bool) {
	for _, r := range SetRules {
		if mainSuffix(name, r) {
			return r, true
		}
	}
	return SetRule{}, false
}

func mainSuffix(name string, r SetRule) bool {
	return len(name) > len(r.Main) && strings.EqualFold(name[len(name)-len(r.Main):], r.Main)
}

// SetStem returns name (a path or an object key) without the extension
// that makes it the main file or a part of one of SetRules (a
// shapefile's, a MapInfo table's, a GML file's), and whether it is one.
func SetStem(name string) (string, bool) {
	if r, ok := SetRuleOf(name); ok {
		return name[:len(name)-len(r.Main)], true
	}
	for _, r := range SetRules {
		if hasExt(r.Parts, path.Ext(name)) {
			return strings.TrimSuffix(name, path.Ext(name)), true
		}
	}
	return "", false
}

// IsFileSet reports whether name is the main file of a multi-file format
// (a .shp, .tab, .mif, or a .gml or .xml with its optional schema).
func IsFileSet(name string) bool { _, ok := SetRuleOf(name); return ok }

// ShapefileSet is the files of one multi-file set (a shapefile, a MapInfo
// table) on local disk.
type ShapefileSet struct {
	// Parts maps each part of the rule that is present (lower-case
	// extension) to its path. The main file is always present.
	Parts map[string]string
	rule  SetRule
}

// FindShapefileSet finds the parts of the set of mainPath (a .shp, or
// another main file of SetRules; anything else is a set of one file): the
// main file itself, and each part of its rule whose file beside it has
// the same base name, both matched case-insensitively. It fails only when
// the directory cannot be read.
func FindShapefileSet(mainPath string) (ShapefileSet, error) {
	rule, ok := SetRuleOf(mainPath)
	if !ok {
		rule = SetRule{Main: strings.ToLower(filepath.Ext(mainPath))}
	}
	set := ShapefileSet{Parts: map[string]string{rule.Main: mainPath}, rule: rule}
	dir, base := filepath.Split(mainPath)
	stem := base[:len(base)-len(rule.Main)]
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return set, err
	}
	for _, ext := range rule.Parts {
		for _, e := range entries {
			if !e.IsDir() && strings.EqualFold(e.Name(), stem+ext) {
				set.Parts[ext] = filepath.Join(dir, e.Name())
				break
			}
		}
	}
	return set, nil
}

// Paths returns the paths of the parts present, the main file first, then
// in the rule's order.
func (s ShapefileSet) Paths() []string {
	ps := []string{s.Parts[s.rule.Main]}
	for _, ext := range s.rule.Parts {
		if p, ok := s.Parts[ext]; ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// Missing returns the rule's required parts that are not present, in
// that order.
func (s ShapefileSet) Missing() []string {
	var missing []string
	for _, ext := range s.rule.Required {
		if _, ok := s.Parts[ext]; !ok {
			missing = append(missing, ext)
		}
	}
	return missing
}

// MapInfoParts are the files beside a MapInfo .tab (.dat, .map, .id) or
// .mif (.mid): they never start a job on their own (IsSidecar).
var MapInfoParts = []string{".dat", ".map", ".id", ".mid"}
