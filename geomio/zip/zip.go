package zip

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/geoingest/geoingest/geomio/fileset"
	"github.com/geoingest/geoingest/geomio/geojson"
	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/kml"
	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/geoingest/geoingest/geomio/shapefile"
)

// ratioFloor is the entry size below which the compression ratio is not
// checked: small runs of padding legitimately compress very well.
const ratioFloor = 1 << 20

var errZipLimit = errors.New("zip limit exceeded")

// Open extracts the layers of a zip (shapefile sets, GeoJSON files:
// .geojson, and .json in a zip without shapefiles; and what GDAL reads:
// File Geodatabase folders, GeoPackage, FlatGeobuf, KML (a KMZ is such a
// zip), GML, MapInfo) into a private temporary directory (removed by Close)
// and reads them as one stream, in lexical order of their paths. Entries
// with absolute or parent-relative paths are refused; __MACOSX/ and other
// files are ignored. Limits are enforced on the bytes actually extracted.
func Open(zipPath string, opts core.Options) (_ core.Reader, err error) {
	// The entry count is checked from the end-of-directory record first:
	// archive/zip reads every entry of the directory into memory.
	if err := CheckZipDirectory(zipPath, opts.Limits); err != nil {
		return nil, err
	}
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, &core.Error{File: zipPath, Problem: "invalid zip", Err: err}
	}
	defer zr.Close()
	lim := opts.Limits
	fi, err := os.Stat(zipPath)
	if err != nil {
		return nil, &core.Error{File: zipPath, Problem: "open", Err: err}
	}
	// The whole archive's ratio bounds what many small entries, each below
	// the per-entry ratio check's floor, may expand to together.
	maxTotalRatio := lim.MaxCompressionRatio * max(fi.Size(), 1)
	if len(zr.File) > lim.MaxEntries {
		return nil, tooManyEntries(zipPath, int64(len(zr.File)), lim.MaxEntries)
	}
	dir, err := os.MkdirTemp(opts.TempDir, "geomio-zip-")
	if err != nil {
		return nil, fmt.Errorf("%s: temp dir: %w", zipPath, err) // not the input's fault
	}
	cleanup := func() error { return os.RemoveAll(dir) }
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	gdbDirs := unnamedGDBFolders(zr.File)
	gdbLocal := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(zipPath), filepath.Ext(zipPath)), ".gdb") + ".gdb"
	var total int64
	var shps, jsons []string // entry names of .shp and GeoJSON files
	var ogrs []string        // entry names of files (and .gdb folders) read with GDAL
	var loose []string       // .csv and .xml entries: layers only of a zip with no other
	seen := map[string]bool{}
	for _, f := range zr.File {
		name := strings.ReplaceAll(f.Name, `\`, "/")
		if err := checkEntryName(name); err != nil {
			return nil, &core.Error{File: zipPath + "/" + f.Name, Problem: "unsafe zip entry", Err: err}
		}
		if strings.HasSuffix(name, "/") || strings.HasPrefix(name, "__MACOSX/") || strings.HasPrefix(path.Base(name), "._") {
			continue
		}
		gdb := gdbFolder(name)
		clean := path.Clean(name)
		if dir := path.Dir(clean); gdb == "" && gdbDirs[dir] && isGDBFile(path.Base(clean)) {
			// A File Geodatabase's files in a folder not named .gdb
			// (the folder's contents zipped): GDAL opens a .gdb.
			gdb = gdbLocal
			if dir != "." {
				gdb = dir + ".gdb"
			}
			clean = path.Join(gdb, path.Base(clean))
		}
		ext := strings.ToLower(path.Ext(name))
		if !fileset.IsShapefilePart(name) && ext != ".geojson" && ext != ".json" && gdb == "" && !zipOGRPart(ext) && ext != ".csv" && ext != ".xml" {
			continue
		}
		if seen[strings.ToLower(clean)] {
			return nil, &core.Error{File: zipPath + "/" + f.Name, Problem: "duplicate zip entry"}
		}
		seen[strings.ToLower(clean)] = true
		n, err := extractEntry(f, filepath.Join(dir, filepath.FromSlash(clean)), lim, lim.MaxUncompressedBytes-total)
		total += n
		if err == nil && total > ratioFloor && total > maxTotalRatio {
			err = &core.Error{Problem: fmt.Sprintf("zip expands to more than %d times its size", lim.MaxCompressionRatio), Err: errZipLimit}
		}
		if err != nil {
			var ie *core.Error
			if errors.As(err, &ie) {
				ie.File = zipPath + "/" + f.Name
				return nil, ie
			}
			return nil, &core.Error{File: zipPath + "/" + f.Name, Problem: "extract", Err: err}
		}
		switch ext := strings.ToLower(path.Ext(clean)); {
		case gdb != "":
			if !slices.Contains(ogrs, gdb) {
				ogrs = append(ogrs, gdb)
			}
		case ext == ".shp":
			shps = append(shps, clean)
		case ext == ".geojson" || ext == ".json":
			jsons = append(jsons, clean)
		case zipOGRLayer(ext):
			ogrs = append(ogrs, clean)
		case ext == ".csv" || ext == ".xml":
			loose = append(loose, clean)
		}
		if n := len(shps) + len(jsons); n > lim.MaxLayers {
			// Counted as extracted (a .json beside shapefiles is
			// no layer, but the files it could be are enough).
			return nil, core.UploadLimitError(zipPath, core.OverLimit(core.LimitLayers, int64(lim.MaxLayers), "more than %d layers"))
		}
	}
	if len(shps) == 0 && len(jsons) == 0 && len(ogrs) == 0 {
		// Nothing else: its CSV files (with a WKT column) and .xml
		// files (GML, as INSPIRE downloads name it) are its layers.
		// Beside other layers they are metadata.
		ogrs = loose
	}
	if len(shps) == 0 && len(jsons) == 0 && len(ogrs) == 0 {
		return nil, &core.Error{File: zipPath, Problem: "unsupported format: zip holds no shapefile, GeoJSON, File Geodatabase (.gdb folder), GeoPackage, FlatGeobuf, KML, GML, MapInfo or CSV file"}
	}
	// The zip's sources: each shapefile set and GeoJSON file is one
	// layer, named by its path; each dataset read with GDAL and each KML
	// document has layers of its own, named by the path of their dataset
	// when the zip holds more than one source. --layer is matched against
	// the whole zip.
	kmz := strings.EqualFold(filepath.Ext(zipPath), ".kmz")
	if kmz {
		first := firstKML(ogrs)
		ogrs = slices.DeleteFunc(ogrs, func(o string) bool {
			return strings.EqualFold(path.Ext(o), ".kml") && o != first
		})
	}
	var jsonLayers []string
	for _, j := range jsons {
		if len(shps) > 0 && strings.EqualFold(path.Ext(j), ".json") {
			continue // beside shapefiles, a .json is metadata, not a layer
		}
		jsonLayers = append(jsonLayers, j)
	}
	datasets := 0
	for _, o := range ogrs {
		if _, ok := ogr.FormatOf(o, nil); ok || strings.EqualFold(path.Ext(o), ".gdb") || strings.EqualFold(path.Ext(o), ".kml") {
			datasets++
		}
	}
	several := len(shps)+len(jsonLayers)+datasets > 1
	zl := &core.ArchiveLayers{Want: opts.Layers}
	sub := func(dataset string) core.Options {
		z := &core.Archive{Layers: zl, Root: dir}
		if several {
			z.Prefix = dataset + "/"
		}
		return core.WithArchive(opts, z)
	}
	var layers []core.LayerSource
	for _, s := range shps {
		if !zl.Pick(strings.TrimSuffix(s, path.Ext(s))) {
			continue
		}
		set, err := shapefile.FindSidecars(filepath.Join(dir, filepath.FromSlash(s)))
		if err != nil {
			return nil, &core.Error{File: zipPath + "/" + s, Problem: "open", Err: err}
		}
		name, file := strings.TrimSuffix(s, path.Ext(s)), zipPath+"/"+s
		layers = append(layers, core.LayerSource{Name: name, Open: func(base int64) (core.LayerReader, error) {
			return shapefile.OpenSet(set, file, name, opts, base)
		}})
	}
	for _, j := range jsonLayers {
		if !zl.Pick(strings.TrimSuffix(j, path.Ext(j))) {
			continue
		}
		name, file, local := strings.TrimSuffix(j, path.Ext(j)), zipPath+"/"+j, filepath.Join(dir, filepath.FromSlash(j))
		layers = append(layers, core.LayerSource{Name: name, Open: func(base int64) (core.LayerReader, error) {
			return geojson.OpenAs(local, file, name, base, opts)
		}})
	}
	for _, o := range ogrs {
		if strings.EqualFold(path.Ext(o), ".kml") {
			// A KMZ is its first KML document (the others are what it
			// links to); a plain zip's KML files are each read.
			name, file, local := strings.TrimSuffix(o, path.Ext(o)), zipPath+"/"+o, filepath.Join(dir, filepath.FromSlash(o))
			kopts := sub(o)
			base := kml.Base(o)
			var link kml.Link
			if kmz {
				base = kml.Base(zipPath)
				link = func(href string) (string, string, bool) {
					// An href is relative to the archive's root; only
					// what was extracted (a .kml) can be read.
					rel := path.Clean(strings.ReplaceAll(href, `\`, "/"))
					if checkEntryName(rel) != nil || !seen[strings.ToLower(rel)] {
						return "", "", false
					}
					return filepath.Join(dir, filepath.FromSlash(rel)), zipPath + "/" + rel, true
				}
			}
			layers = append(layers, core.LayerSource{Name: name, Open: func(first int64) (core.LayerReader, error) {
				return kml.Open(local, file, base, kopts, first, link)
			}})
			continue
		}
		f, ok := ogr.FormatOf(o, nil)
		if strings.EqualFold(path.Ext(o), ".gdb") {
			f, ok = ogr.FileGDB, true
		}
		if !ok {
			continue
		}
		name, file, local := strings.TrimSuffix(o, path.Ext(o)), zipPath+"/"+o, filepath.Join(dir, filepath.FromSlash(o))
		oopts := sub(o)
		layers = append(layers, core.LayerSource{Name: name, Open: func(base int64) (core.LayerReader, error) {
			return ogr.OpenReader(local, file, f, oopts, base)
		}})
	}
	if len(layers) == 0 {
		return nil, zl.Check(zipPath) // every layer is known: none is wanted
	}
	check := func() error { return zl.Check(zipPath) }
	if len(opts.Layers) == 0 {
		check = nil
	}
	// In lexical order of their paths.
	sort.SliceStable(layers, func(a, b int) bool { return layers[a].Name < layers[b].Name })
	m, err := core.NewMultiReader(core.Layers{Sources: layers, Cleanup: cleanup, Check: check})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// firstKML is the first .kml among entry names, "" if none.
func firstKML(names []string) string {
	for _, n := range names {
		if strings.EqualFold(path.Ext(n), ".kml") {
			return n
		}
	}
	return ""
}

// gdbCatalog is the file every File Geodatabase folder holds: its system
// catalog, table 1.
const gdbCatalog = "a00000001.gdbtable"

// unnamedGDBFolders returns the folders of a zip ("." for its root) that
// hold a File Geodatabase without being named .gdb: the catalog table is
// in them, outside any .gdb folder. Users often zip a geodatabase's
// contents rather than its folder.
func unnamedGDBFolders(files []*zip.File) map[string]bool {
	dirs := map[string]bool{}
	for _, f := range files {
		name := path.Clean(strings.ReplaceAll(f.Name, `\`, "/"))
		if strings.EqualFold(path.Base(name), gdbCatalog) && gdbFolder(name) == "" && !strings.HasPrefix(name, "__MACOSX/") {
			dirs[path.Dir(name)] = true
		}
	}
	return dirs
}

// isGDBFile reports whether base is the name of a File Geodatabase's own
// file: its tables and their indexes (a0000000N.gdbtable, .gdbtablx,
// .gdbindexes, .atx, .spx, .freelist, .horizon, ...), "gdb" and
// "timestamps". Other files beside them (a shapefile, a readme) are not
// moved into the geodatabase.
func isGDBFile(base string) bool {
	b := strings.ToLower(base)
	if b == "gdb" || b == "timestamps" {
		return true
	}
	if len(b) < 10 || b[0] != 'a' || b[9] != '.' {
		return false
	}
	for _, c := range b[1:9] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// gdbFolder returns the path of the File Geodatabase folder (a directory
// whose name ends in .gdb) that zip entry name lies in, or "".
func gdbFolder(name string) string {
	els := strings.Split(name, "/")
	for i, el := range els[:len(els)-1] {
		if strings.EqualFold(path.Ext(el), ".gdb") {
			return strings.Join(els[:i+1], "/")
		}
	}
	return ""
}

// zipOGRLayer reports whether a zip entry with extension ext (lower case)
// is a layer file read with GDAL. A .xml or .csv in a zip is a layer only
// when the zip holds no other (beside a shapefile, it is metadata).
func zipOGRLayer(ext string) bool {
	switch ext {
	case ".gpkg", ".fgb", ".kml", ".gml", ".tab", ".mif":
		return true
	}
	return false
}

// zipOGRPart reports whether a zip entry with extension ext is extracted
// for GDAL: a layer file, a MapInfo part or a GML schema (GMLSchemaParts).
func zipOGRPart(ext string) bool {
	switch ext {
	case ".dat", ".map", ".id", ".mid", ".xsd", ".gfs":
		return true
	}
	return zipOGRLayer(ext)
}

// checkEntryName refuses absolute paths, drive letters and ".." elements.
func checkEntryName(name string) error {
	if strings.HasPrefix(name, "/") || (len(name) >= 2 && name[1] == ':') {
		return fmt.Errorf("absolute path %q", name)
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return fmt.Errorf("parent directory in path %q", name)
		}
	}
	return nil
}

// extractEntry copies one entry to dst, counting the bytes actually
// written (headers are not trusted) against the remaining total budget and
// the per-entry compression ratio. It returns the bytes written.
func extractEntry(f *zip.File, dst string, lim core.Limits, budget int64) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, err
	}
	rc, err := f.Open() // reads at most CompressedSize64 compressed bytes
	if err != nil {
		return 0, &core.Error{Problem: "invalid zip entry", Err: err}
	}
	defer rc.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	maxRatio := lim.MaxCompressionRatio * max(int64(f.CompressedSize64), 1)
	var n int64
	buf := make([]byte, 32<<10)
	for {
		k, rerr := rc.Read(buf)
		if k > 0 {
			n += int64(k)
			if n > budget {
				return n, &core.Error{Problem: fmt.Sprintf("zip expands to more than %d bytes", lim.MaxUncompressedBytes), Err: errZipLimit}
			}
			if n > ratioFloor && n > maxRatio {
				return n, &core.Error{Problem: fmt.Sprintf("zip entry compression ratio above %d", lim.MaxCompressionRatio), Err: errZipLimit}
			}
			if _, err := out.Write(buf[:k]); err != nil {
				return n, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, &core.Error{Problem: "invalid zip entry", Err: rerr}
		}
	}
	return n, out.Close()
}

// tooManyEntries is the error of a zip of n entries, over max.
func tooManyEntries(zipPath string, n int64, max int) *core.Error {
	return &core.Error{File: zipPath, Problem: fmt.Sprintf("zip has %d entries", n),
		Err: core.OverLimit(core.LimitZipEntries, int64(max), "more than %d entries")}
}

// dirBytesPerEntry is the central directory size per allowed entry above
// which a zip is refused before its directory is read: an entry's record
// is 46 bytes and its name, extra field and comment, which real archives
// keep to a few hundred bytes.
const dirBytesPerEntry = 1 << 10

// CheckZipDirectory reads the end-of-central-directory record (and its
// zip64 version) of the zip at zipPath, and refuses an archive that
// declares more entries than lim.MaxEntries, or a central directory too
// large for that many, before archive/zip reads the directory into
// memory. A zip whose record cannot be found is left to archive/zip to
// refuse.
func CheckZipDirectory(zipPath string, lim core.Limits) error {
	f, err := os.Open(zipPath)
	if err != nil {
		return &core.Error{File: zipPath, Problem: "open", Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return &core.Error{File: zipPath, Problem: "open", Err: err}
	}
	const eocdLen = 22
	tail := min(fi.Size(), eocdLen+0xFFFF)
	buf := make([]byte, tail)
	if _, err := f.ReadAt(buf, fi.Size()-tail); err != nil {
		return &core.Error{File: zipPath, Problem: "read", Err: err}
	}
	le := binary.LittleEndian
	i := len(buf) - eocdLen
	for ; i >= 0; i-- {
		if string(buf[i:i+4]) == "PK\x05\x06" && i+eocdLen+int(le.Uint16(buf[i+20:])) <= len(buf) {
			break
		}
	}
	if i < 0 {
		return nil
	}
	entries, dirSize := int64(le.Uint16(buf[i+10:])), int64(le.Uint32(buf[i+12:]))
	if (entries == 0xFFFF || dirSize == 0xFFFFFFFF) && i >= 20 && string(buf[i-20:i-16]) == "PK\x06\x07" {
		var rec [56]byte
		if _, err := f.ReadAt(rec[:], int64(le.Uint64(buf[i-20+8:]))); err == nil && string(rec[:4]) == "PK\x06\x06" {
			entries, dirSize = int64(min(le.Uint64(rec[32:]), 1<<62)), int64(min(le.Uint64(rec[40:]), 1<<62))
		}
	}
	if entries > int64(lim.MaxEntries) {
		return tooManyEntries(zipPath, entries, lim.MaxEntries)
	}
	if dirSize > int64(lim.MaxEntries)*dirBytesPerEntry {
		return &core.Error{File: zipPath, Problem: fmt.Sprintf("zip directory of %d bytes", dirSize),
			Err: core.OverLimit(core.LimitZipEntries, int64(lim.MaxEntries), fmt.Sprintf("more than %d bytes of directory for at most %%d entries", int64(lim.MaxEntries)*dirBytesPerEntry))}
	}
	return nil
}
