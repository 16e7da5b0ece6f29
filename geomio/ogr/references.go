package ogr

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/geoingest/geoingest/geomio/fileset"
	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/shapefile"
)

// A file read with GDAL may name other files: a GML's schema
// (xsi:schemaLocation) and the schemas that schema includes or imports, a
// MapInfo view's tables (Open Table), a MapInfo seamless table's base
// tables. GDAL would open each wherever it points: a file of the
// machine's, another job's upload, a GDAL virtual file system path
// (/vsicurl/, /vsis3/, /vsistdin/, ...). Before GDAL sees the file,
// geoingest reads these references and fails the job on one that
// points outside the job's folder or at a virtual file system, naming
// it. A URL (an http schema location) is let through: GDAL is never
// given the network (the reading child's sandbox), so it is never
// fetched. The sandbox's Landlock rules are the guarantee; this check
// makes the failure say which reference it was.

// refProblem says why the reference ref, written in a file in folder
// dir, may not be followed when the job's folder is root: "" when it is
// a file inside root, or a URL.
func refProblem(ref, dir, root string) string {
	r := strings.TrimSpace(ref)
	low := strings.ToLower(r)
	if strings.Contains(low, "/vsi") {
		return "a GDAL virtual file system path, which geoingest never opens"
	}
	if p, ok := strings.CutPrefix(low, "file://"); ok {
		r = r[len(r)-len(p):]
	} else if i := strings.Index(low, "://"); i > 0 && !strings.ContainsAny(low[:i], `/\`) {
		return "" // a URL: never fetched
	}
	r = filepath.FromSlash(strings.ReplaceAll(r, `\`, "/"))
	if !filepath.IsAbs(r) {
		r = filepath.Join(dir, r)
	}
	rel, err := filepath.Rel(root, filepath.Clean(r))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "outside the upload, which geoingest never reads"
	}
	return ""
}

// refError is the *Error of a reference that may not be followed.
func refError(file, what, ref, why string) *core.Error {
	return &core.Error{File: file, Problem: fmt.Sprintf("%s %q: %s", what, ref, why)}
}

// CheckGMLRefs checks a GML file's schema locations (head: its start,
// decompressed) and the schema files it will be read with (xsd), and
// every schema they include, import or redefine, recursively.
func CheckGMLRefs(file, dir, root string, head []byte, xsd string) error {
	for _, loc := range AllSchemaLocations(head) {
		if why := refProblem(loc, dir, root); why != "" {
			return refError(file, "names the schema", loc, why)
		}
	}
	if xsd == "" {
		return nil
	}
	seen := map[string]bool{}
	var walk func(p string, depth int) error
	walk = func(p string, depth int) error {
		if seen[p] || len(seen) > 100 || depth > 10 {
			return nil
		}
		seen[p] = true
		refs, err := SchemaRefs(p)
		if err != nil {
			return nil // GDAL says what is wrong with it
		}
		for _, ref := range refs {
			if why := refProblem(ref, filepath.Dir(p), root); why != "" {
				return refError(file, "has a schema ("+filepath.Base(p)+") that includes", ref, why)
			}
			if strings.Contains(ref, "://") {
				continue
			}
			next := ref
			if !filepath.IsAbs(next) {
				next = filepath.Join(filepath.Dir(p), filepath.FromSlash(ref))
			}
			if err := walk(filepath.Clean(next), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(xsd, 0)
}

// AllSchemaLocations are every location of the first xsi:schemaLocation
// (and xsi:noNamespaceSchemaLocation) in head.
func AllSchemaLocations(head []byte) []string {
	var out []string
	for _, attr := range []string{"schemaLocation", "noNamespaceSchemaLocation"} {
		m := regexp.MustCompile(`:` + attr + `\s*=\s*("[^"]*"|'[^']*')`).FindSubmatch(head)
		if m == nil {
			continue
		}
		fields := strings.Fields(string(m[1][1 : len(m[1])-1]))
		start := 1
		if attr == "noNamespaceSchemaLocation" {
			start = 0
		}
		for i := start; i < len(fields); i += 2 - start {
			out = append(out, fields[i])
		}
	}
	return out
}

const xsdNamespace = "http://www.w3.org/2001/XMLSchema"

// SchemaRefs are the schemaLocation of every include, import, redefine
// and override of the XML Schema at p (its first 16 MB).
func SchemaRefs(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := xml.NewDecoder(bufio.NewReader(io.LimitReader(f, 16<<20)))
	d.Strict = false
	var out []string
	for {
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Space != xsdNamespace {
			continue
		}
		switch se.Name.Local {
		case "include", "import", "redefine", "override":
			for _, a := range se.Attr {
				if a.Name.Local == "schemaLocation" {
					out = append(out, a.Value)
				}
			}
		}
	}
}

var (
	tabOpenTable = regexp.MustCompile(`(?im)^\s*open\s+table\s+("[^"]*"|\S+)`)
	tabSeamless  = regexp.MustCompile(`(?i)"\\IsSeamless"\s*=\s*"TRUE"`)
)

// CheckMapInfoRefs checks a MapInfo .tab (path, in the job's folder
// root): the tables a view opens, and the base tables of a seamless
// table (the "Table" column of its index, in the .dat beside it).
func CheckMapInfoRefs(path, file, root string) error {
	if !strings.EqualFold(filepath.Ext(path), ".tab") {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	head, _ := io.ReadAll(io.LimitReader(f, 64<<10))
	f.Close()
	dir := filepath.Dir(path)
	for _, m := range tabOpenTable.FindAllSubmatch(head, -1) {
		ref := strings.Trim(string(m[1]), `"`)
		if why := refProblem(ref, dir, root); why != "" {
			return refError(file, "is a MapInfo view that opens the table", ref, why)
		}
	}
	if !tabSeamless.Match(head) {
		return nil
	}
	set, err := fileset.FindShapefileSet(path)
	if err != nil {
		return nil
	}
	dat := set.Parts[".dat"]
	if dat == "" {
		return nil
	}
	df, err := os.Open(dat)
	if err != nil {
		return nil
	}
	defer df.Close()
	d, err := shapefile.OpenDBF(file, df, "", "", 1<<20)
	if err != nil {
		return nil
	}
	for i := 0; i < 100_000; i++ {
		deleted, err := d.Next()
		if err != nil {
			return nil
		}
		if deleted {
			continue
		}
		props, err := d.Properties()
		if err != nil {
			return nil
		}
		var row map[string]any
		if json.Unmarshal(props, &row) != nil {
			return nil
		}
		for k, v := range row {
			ref, ok := v.(string)
			if !ok || !strings.EqualFold(k, "Table") {
				continue
			}
			if why := refProblem(ref, dir, root); why != "" {
				return refError(file, "is a MapInfo seamless table whose part is", ref, why)
			}
		}
	}
	return nil
}
