package geomio

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/geoingest/geoingest/internal/testsupport/hostile/corpus"
)

// hostileSeeds writes the hostile corpus's cases (those that need no GDAL
// tool to be made) and adds each file whose name ends in one of exts as
// a seed.
func hostileSeeds(f *testing.F, exts ...string) {
	f.Helper()
	env := corpus.Env{Addr: "127.0.0.1:9", Outside: filepath.Join(f.TempDir(), "outside")}
	_ = os.MkdirAll(env.Outside, 0o755)
	for _, c := range corpus.Cases() {
		dir := filepath.Join(f.TempDir(), c.Name)
		_ = os.MkdirAll(dir, 0o755)
		if _, err := c.Write(dir, env); err != nil {
			continue // made with GDAL's tools, which this machine lacks
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			for _, ext := range exts {
				if strings.HasSuffix(e.Name(), ext) {
					if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && len(b) < 1<<20 {
						f.Add(b)
					}
				}
			}
		}
	}
}

// FuzzHostileZip reads zips seeded with the hostile corpus's (symlinks,
// ../ names, bombs) under the fuzz limits: never a panic, never more
// than the limits allow.
func FuzzHostileZip(f *testing.F) {
	hostileSeeds(f, ".zip")
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.zip")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fuzzDrain(t, p, core.Options{Limits: fuzzLimits})
	})
}

// FuzzHostileKML reads KML seeded with the corpus's (NetworkLinks,
// external entities, entity expansion).
func FuzzHostileKML(f *testing.F) {
	hostileSeeds(f, ".kml")
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.kml")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fuzzDrain(t, p, core.Options{Limits: fuzzLimits})
	})
}

// FuzzSchemaReferences checks a GML and its schema, both fuzzed from
// the corpus's, for references: never a panic, and a schema location
// or include naming a GDAL virtual file system always refused.
func FuzzSchemaReferences(f *testing.F) {
	hostileSeeds(f, ".gml", ".xsd")
	f.Add([]byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:include schemaLocation="/vsicurl/http://127.0.0.1:9/x"/></xs:schema>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		root := t.TempDir()
		xsd := filepath.Join(root, "a.xsd")
		if err := os.WriteFile(xsd, b, 0o600); err != nil {
			t.Fatal(err)
		}
		err := ogr.CheckGMLRefs("a.gml", root, root, b, xsd)
		refs, _ := ogr.SchemaRefs(xsd)
		for _, r := range append(refs, ogr.AllSchemaLocations(b)...) {
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
		err := ogr.CheckMapInfoRefs(p, "a.tab", root)
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
		local, tmp, err := ogr.Gunzip(p, "f.gml.gz", core.Options{Limits: fuzzLimits, TempDir: dir})
		if err != nil {
			return
		}
		defer os.RemoveAll(tmp)
		fi, err := os.Stat(local)
		if err != nil {
			t.Fatal(err)
		}
		l := fuzzLimits.WithDefaults()
		if fi.Size() > l.MaxCompressionRatio*max(int64(len(b)), 1024) {
			t.Fatalf("%d bytes from %d", fi.Size(), len(b))
		}
	})
}
