// Package corpus writes hostile uploads: files that name URLs, virtual
// file systems and files outside their job's folder, or that make a
// reader spin or swell (#34). Each case writes its upload into a folder
// of its own; what it points at outside goes into Env.Outside, beside a
// secret (Secret) that must never be read. Tests (geomio's, cmd's, the
// chaos suite's) read them under a Listener that must receive nothing.
// Some cases need GDAL's command-line tools (ogr2ogr, ogrinfo) to be
// made.
package corpus

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Secret is the text of every file outside the upload's folder that a
// hostile upload points at: it must appear in no feature, error or log.
const Secret = "OUTSIDE_DATA_42"

// Env is where a case's references point.
type Env struct {
	// Addr is the host:port of the Listener every URL names.
	Addr string
	// Outside is a folder outside every upload's folder, holding
	// secret.txt, secret.xsd and the MapInfo table a.tab, each with
	// Secret in it (WriteOutside).
	Outside string
}

// Case is one hostile upload.
type Case struct {
	Name string
	// Write writes the upload into dir and returns its path.
	Write func(dir string, env Env) (string, error)
	// Fails: reading it must fail (the job FAILED), with Want in the
	// reason when Want is set. Otherwise it may be read, or fail.
	Fails bool
	Want  string
	// GDAL: it is read with GDAL (a build without GDAL refuses it).
	GDAL bool
	// Slow: it runs until a limit stops it (a deadline, CPU time):
	// tests give it short limits.
	Slow bool
}

// WriteOutside writes the files the cases point at into env.Outside.
func WriteOutside(env Env) error {
	if err := os.MkdirAll(env.Outside, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(env.Outside, "secret.txt"), []byte(Secret+"\n"), 0o644); err != nil {
		return err
	}
	xsd := `<?xml version="1.0"?><xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="` + Secret + `" type="xs:string"/></xs:schema>`
	if err := os.WriteFile(filepath.Join(env.Outside, "secret.xsd"), []byte(xsd), 0o644); err != nil {
		return err
	}
	csv := filepath.Join(env.Outside, "a.csv")
	if err := os.WriteFile(csv, []byte("secret,WKT\n"+Secret+",\"POLYGON((0 0,1 0,1 1,0 0))\"\n"), 0o644); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(env.Outside, "a.tab")); err == nil {
		return nil
	}
	if err := tool("ogr2ogr", "-f", "MapInfo File", "-a_srs", "EPSG:4326", filepath.Join(env.Outside, "a.tab"), csv); err != nil {
		return err
	}
	return nil
}

func tool(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// A good polygon, as CSV.
const goodCSV = "name,WKT\ngood,\"POLYGON((0 0,1 0,1 1,0 1,0 0))\"\n"

// gmlWithSchema writes name.gml and name.xsd (GDAL's own), the schema
// given extra after its gml import, and returns the .gml.
func gmlWithSchema(dir, name, extra string) (string, error) {
	csv := filepath.Join(dir, name+".src.csv")
	if err := os.WriteFile(csv, []byte(goodCSV), 0o644); err != nil {
		return "", err
	}
	defer os.Remove(csv)
	p := filepath.Join(dir, name+".gml")
	if err := tool("ogr2ogr", "-f", "GML", "-a_srs", "EPSG:4326", "-nln", "parcels", p, csv); err != nil {
		return "", err
	}
	xsdPath := filepath.Join(dir, name+".xsd")
	xsd, err := os.ReadFile(xsdPath)
	if err != nil {
		return "", err
	}
	i := bytes.Index(xsd, []byte("<xs:element"))
	if i < 0 {
		return "", fmt.Errorf("no element in GDAL's schema")
	}
	out := append(append(append([]byte(nil), xsd[:i]...), extra+"\n"...), xsd[i:]...)
	return p, os.WriteFile(xsdPath, out, 0o644)
}

// gml is a GML 2 document of one parcel, with head before the root
// element, attrs on it, and name (and other properties) given by props.
func gml(head, attrs, props string) string {
	return `<?xml version="1.0" encoding="utf-8"?>` + "\n" + head + `
<ogr:FeatureCollection xmlns:ogr="http://ogr.maptools.org/" xmlns:gml="http://www.opengis.net/gml" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` + attrs + `>
  <gml:featureMember>
    <ogr:parcels fid="parcels.0">
      <ogr:geometryProperty><gml:Polygon srsName="EPSG:4326"><gml:outerBoundaryIs><gml:LinearRing><gml:coordinates>0,0 1,0 1,1 0,1 0,0</gml:coordinates></gml:LinearRing></gml:outerBoundaryIs></gml:Polygon></ogr:geometryProperty>
      ` + props + `
    </ogr:parcels>
  </gml:featureMember>
</ogr:FeatureCollection>
`
}

func write(dir, name, body string) (string, error) {
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, []byte(body), 0o644)
}

// kml is a KML document of one placemark, with head before it and
// extra inside the Document.
func kml(head, extra, name string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + head + `
<kml xmlns="http://www.opengis.net/kml/2.2"><Document>` + extra + `
<Placemark><name>` + name + `</name><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1 0,1 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
</Document></kml>
`
}

// gpkgView writes a GeoPackage whose one feature layer is a view
// selecting expr as a column of each polygon of a base table.
func gpkgView(dir, name, expr string) (string, error) {
	csv := filepath.Join(dir, name+".src.csv")
	if err := os.WriteFile(csv, []byte(goodCSV), 0o644); err != nil {
		return "", err
	}
	defer os.Remove(csv)
	p := filepath.Join(dir, name+".gpkg")
	if err := tool("ogr2ogr", "-f", "GPKG", "-a_srs", "EPSG:4326", "-nlt", "POLYGON", "-nln", "base", p, csv); err != nil {
		return "", err
	}
	for _, sql := range []string{
		"CREATE VIEW hostile AS SELECT fid, geom, " + expr + " AS v FROM base",
		"INSERT INTO gpkg_contents (table_name, data_type, identifier, srs_id) VALUES ('hostile', 'features', 'hostile', 4326)",
		"INSERT INTO gpkg_geometry_columns VALUES ('hostile', 'geom', 'POLYGON', 4326, 0, 0)",
		"DELETE FROM gpkg_geometry_columns WHERE table_name = 'base'",
		"DELETE FROM gpkg_contents WHERE table_name = 'base'",
	} {
		if err := tool("ogrinfo", "-q", p, "-sql", sql); err != nil {
			return "", err
		}
	}
	return p, nil
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// zipOf writes a zip of entries (name, body; a body starting with
// "symlink:" is a symlink to the rest).
func zipOf(p string, entries ...[2]string) (string, error) {
	f, err := os.Create(p)
	if err != nil {
		return "", err
	}
	zw := zip.NewWriter(f)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e[0], Method: zip.Deflate}
		body := e[1]
		if target, ok := strings.CutPrefix(body, "symlink:"); ok {
			h.SetMode(os.ModeSymlink | 0o777)
			body = target
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			return "", err
		}
		if _, err := w.Write([]byte(body)); err != nil {
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return p, f.Close()
}

const goodGeoJSON = `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"good"},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}}]}`

// Cases are the hostile uploads.
func Cases() []Case {
	return []Case{
		{Name: "gml-xsd-include-vsicurl", GDAL: true, Write: func(dir string, env Env) (string, error) {
			return gmlWithSchema(dir, "parcels", `<xs:include schemaLocation="/vsicurl/http://`+env.Addr+`/internal/admin/secret.json"/>`)
		}},
		{Name: "gml-xsd-include-http", GDAL: true, Write: func(dir string, env Env) (string, error) {
			return gmlWithSchema(dir, "parcels", `<xs:include schemaLocation="http://`+env.Addr+`/schema.xsd"/>`)
		}},
		{Name: "gml-xsd-import-vsis3", GDAL: true, Write: func(dir string, env Env) (string, error) {
			return gmlWithSchema(dir, "parcels", `<xs:import namespace="urn:x" schemaLocation="/vsis3/geoingest-private/schema.xsd"/>`)
		}},
		{Name: "gml-xsd-include-vsistdin", GDAL: true, Write: func(dir string, env Env) (string, error) {
			return gmlWithSchema(dir, "parcels", `<xs:include schemaLocation="/vsistdin/"/>`)
		}},
		{Name: "gml-xsd-include-outside", GDAL: true, Fails: true, Want: "outside", Write: func(dir string, env Env) (string, error) {
			return gmlWithSchema(dir, "parcels", `<xs:include schemaLocation="`+filepath.Join(env.Outside, "secret.xsd")+`"/>`)
		}},
		{Name: "gml-xsd-include-dotdot", GDAL: true, Fails: true, Want: "outside", Write: func(dir string, env Env) (string, error) {
			rel, err := filepath.Rel(dir, filepath.Join(env.Outside, "secret.xsd"))
			if err != nil {
				return "", err
			}
			return gmlWithSchema(dir, "parcels", `<xs:include schemaLocation="`+rel+`"/>`)
		}},
		{Name: "gml-schemalocation-url", GDAL: true, Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.gml", gml("", `xsi:schemaLocation="http://ogr.maptools.org/ http://`+env.Addr+`/parcels.xsd"`, `<ogr:name>a</ogr:name>`))
		}},
		{Name: "gml-srsname-url", GDAL: true, Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.gml", strings.Replace(gml("", "", `<ogr:name>a</ogr:name>`), `srsName="EPSG:4326"`, `srsName="http://`+env.Addr+`/crs.wkt"`, 1))
		}},
		{Name: "gml-xlink-href", GDAL: true, Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.gml", gml("", "", `<ogr:name xlink:href="http://`+env.Addr+`/name">a</ogr:name><ogr:other xlink:href="/vsicurl/http://`+env.Addr+`/other"/>`))
		}},
		{Name: "gml-gfs-srs-url", GDAL: true, Write: func(dir string, env Env) (string, error) {
			gfs := `<GMLFeatureClassList><GMLFeatureClass><Name>parcels</Name><ElementPath>parcels</ElementPath><GeometryType>3</GeometryType><SRSName>http://` + env.Addr + `/crs.wkt</SRSName><PropertyDefn><Name>name</Name><ElementPath>name</ElementPath><Type>String</Type></PropertyDefn></GMLFeatureClass></GMLFeatureClassList>`
			if _, err := write(dir, "parcels.gfs", gfs); err != nil {
				return "", err
			}
			return write(dir, "parcels.gml", gml("", "", `<ogr:name>a</ogr:name>`))
		}},
		{Name: "gml-xxe-file", GDAL: true, Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.gml", gml(`<!DOCTYPE ogr:FeatureCollection [<!ENTITY xxe SYSTEM "file://`+filepath.Join(env.Outside, "secret.txt")+`">]>`, "", `<ogr:name>&xxe;</ogr:name>`))
		}},
		{Name: "gml-xxe-http", GDAL: true, Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.gml", gml(`<!DOCTYPE ogr:FeatureCollection [<!ENTITY xxe SYSTEM "http://`+env.Addr+`/xxe">]>`, "", `<ogr:name>&xxe;</ogr:name>`))
		}},
		{Name: "gml-entity-expansion", GDAL: true, Fails: true, Write: func(dir string, env Env) (string, error) {
			ents := `<!ENTITY a0 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx">`
			for i := 1; i < 10; i++ {
				ents += fmt.Sprintf(`<!ENTITY a%d "%s">`, i, strings.Repeat(fmt.Sprintf("&a%d;", i-1), 10))
			}
			return write(dir, "parcels.gml", gml(`<!DOCTYPE ogr:FeatureCollection [`+ents+`]>`, "", `<ogr:name>&a9;</ogr:name>`))
		}},
		{Name: "gml-gz-bomb", GDAL: true, Fails: true, Want: "max-zip-ratio", Write: func(dir string, env Env) (string, error) {
			body := gml("", "", `<ogr:name>`+strings.Repeat("x", 200<<20)+`</ogr:name>`)
			p := filepath.Join(dir, "parcels.gml.gz")
			return p, os.WriteFile(p, gz([]byte(body)), 0o644)
		}},
		{Name: "gml-gz-vertices", GDAL: true, Fails: true, Write: func(dir string, env Env) (string, error) {
			var b strings.Builder
			b.WriteString("0,0 ")
			for i := 0; i < 3_100_000; i++ {
				b.WriteString("1,0 ")
			}
			b.WriteString("0,0")
			body := strings.Replace(gml("", "", `<ogr:name>a</ogr:name>`), "0,0 1,0 1,1 0,1 0,0", b.String(), 1)
			p := filepath.Join(dir, "parcels.gml.gz")
			return p, os.WriteFile(p, gz([]byte(body)), 0o644)
		}},
		{Name: "kml-networklink", Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.kml", kml("", `<NetworkLink><Link><href>http://`+env.Addr+`/link.kml</href></Link></NetworkLink><Style id="s"><IconStyle><Icon><href>http://`+env.Addr+`/icon.png</href></Icon></IconStyle></Style>`, "a"))
		}},
		{Name: "kml-xxe-file", Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.kml", kml(`<!DOCTYPE kml [<!ENTITY xxe SYSTEM "file://`+filepath.Join(env.Outside, "secret.txt")+`">]>`, "", "&xxe;"))
		}},
		{Name: "kml-xxe-http", Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.kml", kml(`<!DOCTYPE kml [<!ENTITY xxe SYSTEM "http://`+env.Addr+`/xxe">]>`, "", "&xxe;"))
		}},
		{Name: "kml-entity-expansion", Write: func(dir string, env Env) (string, error) {
			ents := `<!ENTITY a0 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx">`
			for i := 1; i < 10; i++ {
				ents += fmt.Sprintf(`<!ENTITY a%d "%s">`, i, strings.Repeat(fmt.Sprintf("&a%d;", i-1), 10))
			}
			return write(dir, "parcels.kml", kml(`<!DOCTYPE kml [`+ents+`]>`, "", "&a9;"))
		}},
		{Name: "mapinfo-seamless-outside", GDAL: true, Fails: true, Want: "outside", Write: func(dir string, env Env) (string, error) {
			return seamless(dir, filepath.Join(env.Outside, "a.tab"))
		}},
		{Name: "mapinfo-seamless-dotdot", GDAL: true, Fails: true, Want: "outside", Write: func(dir string, env Env) (string, error) {
			rel, err := filepath.Rel(dir, filepath.Join(env.Outside, "a.tab"))
			if err != nil {
				return "", err
			}
			return seamless(dir, rel)
		}},
		{Name: "mapinfo-view-outside", GDAL: true, Fails: true, Want: "outside", Write: func(dir string, env Env) (string, error) {
			rel, err := filepath.Rel(dir, filepath.Join(env.Outside, "a"))
			if err != nil {
				return "", err
			}
			for _, ext := range []string{".dat", ".map", ".id"} {
				if _, err := write(dir, "view"+ext, ""); err != nil {
					return "", err
				}
			}
			return write(dir, "view.tab", "!Table\n!Version 100\nOpen Table \""+rel+"\" Hide\nOpen Table \""+filepath.Join(env.Outside, "a")+"\" Hide\nCreate View view As\nSelect * From a, a\n")
		}},
		{Name: "gpkg-view-recursive-cte", GDAL: true, Fails: true, Slow: true, Write: func(dir string, env Env) (string, error) {
			return gpkgView(dir, "spin", "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT max(x) FROM c)")
		}},
		{Name: "gpkg-view-printf-blob", GDAL: true, Fails: true, Write: func(dir string, env Env) (string, error) {
			return gpkgView(dir, "blob", "printf('%.*c', 1000000000, 'x')")
		}},
		{Name: "zip-symlink", Fails: true, Write: func(dir string, env Env) (string, error) {
			return zipOf(filepath.Join(dir, "parcels.zip"), [2]string{"parcels.geojson", "symlink:" + filepath.Join(env.Outside, "secret.txt")}, [2]string{"good.geojson", goodGeoJSON})
		}},
		{Name: "zip-dotdot", Fails: true, Write: func(dir string, env Env) (string, error) {
			return zipOf(filepath.Join(dir, "parcels.zip"), [2]string{"../../parcels.geojson", goodGeoJSON})
		}},
		{Name: "zip-bomb", Fails: true, Want: "compression ratio", Write: func(dir string, env Env) (string, error) {
			return zipOf(filepath.Join(dir, "parcels.zip"), [2]string{"parcels.geojson", `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"p":"` + strings.Repeat("x", 100<<20) + `"},"geometry":null}]}`})
		}},
		{Name: "prj-grid-url", Write: func(dir string, env Env) (string, error) {
			return shapefileWithPRJ(dir, `GEOGCS["hostile",DATUM["d",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],EXTENSION["PROJ4","+proj=longlat +ellps=WGS84 +nadgrids=http://`+env.Addr+`/grid.tif +no_defs"]]`)
		}},
		{Name: "prj-grid-abs-path", Write: func(dir string, env Env) (string, error) {
			return shapefileWithPRJ(dir, `GEOGCS["hostile",DATUM["d",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],EXTENSION["PROJ4","+proj=longlat +ellps=WGS84 +nadgrids=`+filepath.Join(env.Outside, "secret.txt")+` +no_defs"]]`)
		}},
		{Name: "geojson-crs-url", Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.geojson", strings.Replace(goodGeoJSON, `"features"`, `"crs":{"type":"link","properties":{"href":"http://`+env.Addr+`/crs","type":"proj4"}},"features"`, 1))
		}},
		{Name: "geojson-crs-name-path", Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.geojson", strings.Replace(goodGeoJSON, `"features"`, `"crs":{"type":"name","properties":{"name":"+proj=longlat +nadgrids=http://`+env.Addr+`/g.tif"}},"features"`, 1))
		}},
		{Name: "csv-wkt-vsicurl", GDAL: true, Write: func(dir string, env Env) (string, error) {
			return write(dir, "parcels.csv", "name,WKT\n/vsicurl/http://"+env.Addr+"/x,\"POLYGON((0 0,1 0,1 1,0 1,0 0))\"\n")
		}},
	}
}

// seamless writes a MapInfo seamless table (its index, one row) whose
// one base table is table, and returns the index's .tab.
func seamless(dir, table string) (string, error) {
	csv := filepath.Join(dir, "index.src.csv")
	if err := os.WriteFile(csv, []byte("Table,Description,WKT\n\""+table+"\",a,\"POLYGON((0 0,1 0,1 1,0 1,0 0))\"\n"), 0o644); err != nil {
		return "", err
	}
	defer os.Remove(csv)
	p := filepath.Join(dir, "index.tab")
	if err := tool("ogr2ogr", "-f", "MapInfo File", "-a_srs", "EPSG:4326", p, csv); err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(b), "\r\n") + "\nbegin_metadata\n\"\\IsSeamless\" = \"TRUE\"\n\"\\IsReadOnly\" = \"FALSE\"\nend_metadata\n"
	return p, os.WriteFile(p, []byte(s), 0o644)
}

// shapefileWithPRJ writes a shapefile of one polygon whose .prj is prj.
func shapefileWithPRJ(dir, prj string) (string, error) {
	csv := filepath.Join(dir, "src.csv")
	if err := os.WriteFile(csv, []byte(goodCSV), 0o644); err != nil {
		return "", err
	}
	defer os.Remove(csv)
	p := filepath.Join(dir, "parcels.shp")
	if err := tool("ogr2ogr", "-f", "ESRI Shapefile", "-nlt", "POLYGON", p, csv); err != nil {
		return "", err
	}
	return p, os.WriteFile(filepath.Join(dir, "parcels.prj"), []byte(prj), 0o644)
}
