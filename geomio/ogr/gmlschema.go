package ogr

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// gmlSchemaHead is how much of a GML file is read for its root element's
// xsi:schemaLocation.
const gmlSchemaHead = 16 << 10

// gmlSchemaOptions returns the GDAL open options that make the GML file at
// path be read with the schema uploaded beside it, if any: the .xsd named
// by a relative xsi:schemaLocation of its root element, else NAME.xsd,
// else NAME.gfs (NAME: the file's name without .gz and .gml or .xml),
// matched case-insensitively in the file's own directory. GDAL finds
// NAME.xsd beside NAME.gml itself, but not beside NAME.gml.gz nor under
// another name. A schema is only ever read from the upload: a remote
// schemaLocation is ignored (and GDAL is told never to download one,
// fmtGML).
func gmlSchemaOptions(path string) []string {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	find := func(name string) string {
		for _, e := range entries {
			if !e.IsDir() && strings.EqualFold(e.Name(), name) {
				return filepath.Join(dir, e.Name())
			}
		}
		return ""
	}
	for _, loc := range gmlSchemaLocations(readGMLHead(path)) {
		if p := find(loc); p != "" {
			return []string{"XSD=" + p}
		}
	}
	stem := gmlStem(filepath.Base(path))
	if p := find(stem + ".xsd"); p != "" {
		return []string{"XSD=" + p}
	}
	if p := find(stem + ".gfs"); p != "" {
		return []string{"GFS_TEMPLATE=" + p}
	}
	return nil
}

// gmlStem is a GML file's name without .gz and then .gml or .xml.
func gmlStem(name string) string {
	if strings.EqualFold(filepath.Ext(name), ".gz") {
		name = strings.TrimSuffix(name, filepath.Ext(name))
	}
	if ext := strings.ToLower(filepath.Ext(name)); ext == ".gml" || ext == ".xml" {
		name = strings.TrimSuffix(name, filepath.Ext(name))
	}
	return name
}

// readGMLHead returns the first gmlSchemaHead bytes of the GML file at
// path, decompressed when it is gzipped; nil when it cannot be read.
func readGMLHead(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	r, err := gmlBody(path, f)
	if err != nil {
		return nil
	}
	head, _ := io.ReadAll(io.LimitReader(r, gmlSchemaHead))
	return head
}

// gmlBody returns the GML document of f (the file at path), decompressed
// when path ends in .gz.
func gmlBody(path string, f io.Reader) (io.Reader, error) {
	if strings.EqualFold(filepath.Ext(path), ".gz") {
		return gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
	}
	return bufio.NewReaderSize(f, 64<<10), nil
}

// gmlSchemaLocations returns the local schema files that the first
// xsi:schemaLocation attribute in head names (its namespace and location
// pairs): the base names of the locations that are neither URLs nor
// absolute paths and end in .xsd. Nothing else in head is interpreted.
func gmlSchemaLocations(head []byte) []string {
	i := bytes.Index(head, []byte(":schemaLocation"))
	if i < 0 {
		return nil
	}
	rest := bytes.TrimLeft(head[i+len(":schemaLocation"):], " \t\r\n")
	if len(rest) == 0 || rest[0] != '=' {
		return nil
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if len(rest) == 0 || (rest[0] != '"' && rest[0] != '\'') {
		return nil
	}
	end := bytes.IndexByte(rest[1:], rest[0])
	if end < 0 {
		return nil
	}
	fields := strings.Fields(string(rest[1 : 1+end]))
	var locs []string
	for i := 1; i < len(fields); i += 2 {
		loc := fields[i]
		if strings.Contains(loc, "://") || strings.HasPrefix(loc, "/") || strings.Contains(loc, "\\") || strings.ContainsAny(loc, "?#&") {
			continue
		}
		base := filepath.Base(filepath.FromSlash(loc))
		if !strings.EqualFold(filepath.Ext(base), ".xsd") || base == "." || base == ".." {
			continue
		}
		locs = append(locs, base)
	}
	return locs
}
