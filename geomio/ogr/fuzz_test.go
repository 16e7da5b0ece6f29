package ogr

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/internal/testsupport/hostile/corpus"
)

// refLimits are the fuzz targets' limits (geomio's fuzzLimits).
var refLimits = core.Limits{MaxUncompressedBytes: 16 << 20, MaxRecordBytes: 1 << 20, MaxEntries: 100,
	MaxVertices: 1000, MaxPropertyBytes: 1000, MaxProperties: 50, MaxLayers: 3, MaxFeatures: 5000}

// FuzzSchemaReferences checks a GML and its schema, both fuzzed from
// the corpus's, for references: never a panic, and a schema location
// or include naming a GDAL virtual file system always refused.
func FuzzSchemaReferences(f *testing.F) {
	corpus.Seeds(f, ".gml", ".xsd")
	f.Add([]byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:include schemaLocation="/vsicurl/http://127.0.0.1:9/x"/></xs:schema>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		root := t.TempDir()
		xsd := filepath.Join(root, "a.xsd")
		if err := os.WriteFile(xsd, b, 0o600); err != nil {
			t.Fatal(err)
		}
		err := CheckGMLRefs("a.gml", root, root, b, xsd)
		refs, _ := SchemaRefs(xsd)
		for _, r := range append(refs, AllSchemaLocations(b)...) {
			if strings.Contains(strings.ToLower(r), "/vsi") && err == nil {
				t.Fatalf("the reference %q was let through", r)
			}
		}
	})
}

// FuzzMapInfoReferences checks fuzzed .tab headers (views) for tables
// they open outside the folder.
func FuzzMapInfoReferences(f *testing.F) {
	f.Add([]byte("!Table\n!Version 100\nOpen Table \"../outside/a\" Hide\nCreate View v As\nSelect * From a\n"))
	f.Add([]byte("!table\n!version 300\n!charset WindowsLatin1\n\nDefinition Table\n  Type NATIVE Charset \"WindowsLatin1\"\n  Fields 1\n    Table Char (254) ;\nbegin_metadata\n\"\\IsSeamless\" = \"TRUE\"\nend_metadata\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		root := t.TempDir()
		p := filepath.Join(root, "a.tab")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		err := CheckMapInfoRefs(p, "a.tab", root)
		if bytes.Contains(bytes.ToLower(b), []byte("open table \"/vsi")) && err == nil {
			t.Fatal("a view opening a virtual file system path was let through")
		}
	})
}

// FuzzGunzip decompresses fuzzed gzip under the fuzz limits: never more
// than the ratio allows on disk.
func FuzzGunzip(f *testing.F) {
	var bomb bytes.Buffer
	w, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	w.Write(bytes.Repeat([]byte("x"), 4<<20))
	w.Close()
	f.Add(bomb.Bytes())
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "f.gml.gz")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		local, tmp, err := Gunzip(p, "f.gml.gz", core.Options{Limits: refLimits, TempDir: dir})
		if err != nil {
			return
		}
		defer os.RemoveAll(tmp)
		fi, err := os.Stat(local)
		if err != nil {
			t.Fatal(err)
		}
		l := refLimits.WithDefaults()
		if fi.Size() > l.MaxCompressionRatio*max(int64(len(b)), 1024) {
			t.Fatalf("%d bytes from %d", fi.Size(), len(b))
		}
	})
}
