//go:build cgo && !geoingest_nogdal

package ogr

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/geoingest/geoingest/geomio/internal/core"
)

// gmlDerivedSchema makes a .gfs file (GDAL's schema of a GML file) that
// exposes each geometry property of a feature type as a geometry field of
// its own, for a GML file uploaded without a schema: GDAL 3.6 then sees one
// geometry per feature (whichever came last), and its .gfs names none.
// It scans the file (scanGMLGeometryProperties); when no feature type has
// more than one geometry property it returns "" (GDAL reads the file as
// it is). Otherwise GDAL prescans the file through a link to it in a
// private directory under tempDir, writing its .gfs there (attributes as
// GDAL types them, never beside the upload), and the feature types with
// several geometry properties get one GeomPropertyDefn each, in their
// order of appearance, with the type their geometries make and the
// type's SRS; a feature type GDAL already gives several geometry fields
// (its registry of known schemas) is left as GDAL reads it. The caller opens the file with GFS_TEMPLATE= the path
// returned, and removes dir (when not "").
func gmlDerivedSchema(path string, o core.Options, f Format) (gfs, dir string, err error) {
	tempDir := o.TempDir
	fh, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer fh.Close()
	r, err := gmlBody(path, fh)
	if err != nil {
		return "", "", nil // GDAL says what is wrong with it
	}
	multi := map[string][]gmlGeomProp{}
	for _, c := range scanGMLGeometryProperties(r) {
		if len(c.Geoms) > 1 {
			multi[c.Name] = c.Geoms
		}
	}
	if len(multi) == 0 {
		return "", "", nil
	}
	dir, err = os.MkdirTemp(tempDir, "geomio-gml-")
	if err != nil {
		return "", "", err
	}
	abs, err := filepath.Abs(path)
	if err == nil {
		err = os.Symlink(abs, filepath.Join(dir, filepath.Base(path)))
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	opts := append(gmlWithout(f.options, "WRITE_GFS="), "WRITE_GFS=YES")
	contain := contain(o, path)
	contain.Read = append(contain.Read, dir, abs)
	contain.Write = []string{dir}
	ds, err := Open(filepath.Join(dir, filepath.Base(path)), f.drivers, opts, contain)
	if err != nil {
		os.RemoveAll(dir)
		return "", "", nil // the real open says why
	}
	ds.Close()
	written, _ := filepath.Glob(filepath.Join(dir, "*.gfs"))
	if len(written) != 1 {
		os.RemoveAll(dir)
		return "", "", nil // GDAL wrote none: read the file as it is
	}
	b, err := os.ReadFile(written[0])
	if err != nil {
		os.RemoveAll(dir)
		return "", "", nil // GDAL wrote none: read the file as it is
	}
	patched, n := addGeomProperties(b, multi)
	if n == 0 {
		os.RemoveAll(dir)
		return "", "", nil // GDAL's schema (its registry's) already has them
	}
	gfs = filepath.Join(dir, "derived.gfs")
	if err := os.WriteFile(gfs, patched, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return gfs, dir, nil
}

func gmlWithout(options []string, prefix string) []string {
	var out []string
	for _, o := range options {
		if !strings.HasPrefix(o, prefix) {
			out = append(out, o)
		}
	}
	return out
}

var (
	gfsClass       = regexp.MustCompile(`(?s)<GMLFeatureClass>.*?</GMLFeatureClass>`)
	gfsElementPath = regexp.MustCompile(`<ElementPath>([^<]*)</ElementPath>`)
	gfsSRSName     = regexp.MustCompile(`<SRSName>([^<]*)</SRSName>`)
	gfsGeometry    = regexp.MustCompile(`(?s)\s*(<!--[^>]*-->\s*)?<(GeometryType|GeometryName|GeometryElementPath)>[^<]*</(GeometryType|GeometryName|GeometryElementPath)>|(?s)\s*<GeomPropertyDefn>.*?</GeomPropertyDefn>`)
)

// addGeomProperties rewrites GDAL's .gfs b: each feature class whose
// element (the last part of its ElementPath) is in multi, and that GDAL
// did not already give several geometry fields (from a schema in its
// registry, gml_registry.xml), loses its one geometry declaration and gets
// a GeomPropertyDefn per geometry property. It returns the new .gfs and
// how many classes it rewrote.
func addGeomProperties(b []byte, multi map[string][]gmlGeomProp) ([]byte, int) {
	n := 0
	out := gfsClass.ReplaceAllFunc(b, func(class []byte) []byte {
		m := gfsElementPath.FindSubmatchIndex(class)
		if m == nil || bytes.Count(class, []byte("<GeomPropertyDefn>")) > 1 {
			return class
		}
		path := string(class[m[2]:m[3]])
		props, ok := multi[path[strings.LastIndex(path, "|")+1:]]
		if !ok {
			return class
		}
		srs := ""
		if s := gfsSRSName.FindSubmatch(class); s != nil {
			srs = string(s[1])
		}
		var defs bytes.Buffer
		for _, p := range props {
			defs.WriteString("\n    <GeomPropertyDefn><Name>")
			xml.EscapeText(&defs, []byte(p.Name))
			defs.WriteString("</Name><ElementPath>")
			xml.EscapeText(&defs, []byte(p.Name))
			fmt.Fprintf(&defs, "</ElementPath><Type>%s</Type>", p.Type)
			if srs != "" {
				defs.WriteString("<SRSName>" + srs + "</SRSName>") // as GDAL escaped it
			}
			defs.WriteString("</GeomPropertyDefn>")
		}
		head := gfsGeometry.ReplaceAll(class[:m[1]], nil)
		rest := gfsGeometry.ReplaceAll(class[m[1]:], nil)
		n++
		out := append(append([]byte(nil), head...), defs.Bytes()...)
		return append(out, rest...)
	})
	return out, n
}
