package geomio

import ()

// kmlDocs are KML documents for the comparisons with GDAL: the layer
// rules (root placemarks, nested and unnamed folders, a lone placemark),
// fields (ExtendedData Data, SchemaData with a typed Schema), geometries
// (nested MultiGeometry, holes, altitudes, points and lines, blanks in
// coordinates), and an encoding declared.
var kmlDocs = map[string]string{
	"nested.kml": `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2" xmlns:gx="http://www.google.com/kml/ext/2.2"><Document><name>docname</name>
<Placemark><name>top</name><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0,5 1,0,5 1,1,5 0,0,5</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
<Folder><name> parcels </name>
<Placemark><name>a</name><description><![CDATA[<b>bold</b> & more]]></description><visibility>0</visibility><ExtendedData><Data name="k1"><value>v1</value></Data></ExtendedData>
<MultiGeometry><Point><coordinates>5,5</coordinates></Point><MultiGeometry><Polygon><outerBoundaryIs><LinearRing><coordinates>
 0,0  1,0
 1,1 0,0
</coordinates></LinearRing></outerBoundaryIs><innerBoundaryIs><LinearRing><coordinates>0.2,0.1 0.8,0.1 0.8,0.7 0.2,0.1</coordinates></LinearRing></innerBoundaryIs></Polygon>
<Polygon><outerBoundaryIs><LinearRing><coordinates>2,2 3,2 3,3 2,2</coordinates></LinearRing></outerBoundaryIs></Polygon></MultiGeometry></MultiGeometry></Placemark>
<Folder><Placemark><name>n</name><LineString><tessellate>1</tessellate><coordinates>1,2 3,4</coordinates></LineString></Placemark></Folder>
<Placemark><name>b</name><TimeStamp><when>2020-01-02T03:04:05Z</when></TimeStamp><ExtendedData><Data name="k2"><value>v2</value></Data></ExtendedData><Point><coordinates>1,2,3</coordinates></Point></Placemark>
<Placemark><name>nogeom</name></Placemark>
</Folder>
<Folder><name>other</name><Placemark><name>Zoë</name><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark></Folder>
</Document></kml>`,
	"schema.kml": `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document>
<Schema name="s" id="s"><SimpleField name="sd" type="string"/><SimpleField name="num" type="int"/><SimpleField name="x" type="double"/></Schema>
<Folder><Placemark><name>a</name><ExtendedData><Data name="k1"><value>v1</value></Data></ExtendedData><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
<Placemark><name>c</name><ExtendedData><SchemaData schemaUrl="#s"><SimpleData name="sd">x</SimpleData><SimpleData name="num">7</SimpleData><SimpleData name="x">2.5</SimpleData></SchemaData></ExtendedData><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 2,0 2,2 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
</Folder>
<Folder/>
<Folder><Folder><name>deep</name><Placemark><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 3,0 3,3 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark></Folder></Folder>
<Placemark><name>root</name><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
</Document></kml>`,
	"overlays.kml": `<kml xmlns="http://www.opengis.net/kml/2.2" xmlns:gx="http://www.google.com/kml/ext/2.2"><Document><Folder><name>f</name>
<Placemark><name>p</name><Point><coordinates>1,2</coordinates></Point></Placemark>
<GroundOverlay><name>go</name><description>d</description><drawOrder>3</drawOrder><Icon><href>img.png</href></Icon><LatLonBox><north>2</north><south>1</south><east>4</east><west>3</west><rotation>10</rotation></LatLonBox></GroundOverlay>
<ScreenOverlay><name>so</name></ScreenOverlay>
<PhotoOverlay><name>po</name><Point><coordinates>1,2</coordinates></Point></PhotoOverlay>
<NetworkLink><name>nl</name><Link><href>x.kml</href></Link></NetworkLink>
<GroundOverlay><name>quad</name><gx:LatLonQuad><coordinates>0,0 1,0 1,1 0,1</coordinates></gx:LatLonQuad></GroundOverlay>
<Placemark><name>after</name><visibility>1</visibility>` + "<Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon>" + `</Placemark>
</Folder></Document></kml>`,
	"extended.kml": `<kml><Document><Schema name="s" id="s"><SimpleField name="sd" type="string"/><SimpleField name="n" type="int"/></Schema><Folder><name>f</name>
<Placemark><ExtendedData><Data name="k1"><value>v1</value></Data><SchemaData schemaUrl="#s"><SimpleData name="sd">x</SimpleData></SchemaData></ExtendedData><Point><coordinates>1,2</coordinates></Point></Placemark>
<Placemark><ExtendedData><SchemaData schemaUrl="#nos"><SimpleData name="sd2">x</SimpleData></SchemaData></ExtendedData><Point><coordinates>1,2</coordinates></Point></Placemark>
<Placemark><ExtendedData><Data name="k1"><value>v1</value></Data><SchemaData schemaUrl="#nos"><SimpleData name="sd2">x</SimpleData></SchemaData></ExtendedData><Point><coordinates>1,2</coordinates></Point></Placemark>
<Placemark><ExtendedData><SchemaData><SimpleData name="sd3">x</SimpleData></SchemaData></ExtendedData><Point><coordinates>1,2</coordinates></Point></Placemark>
<Placemark><ExtendedData><Data name="k9"><value>v9</value></Data><Data name="k9"><value>again</value></Data><Data name="sd"><value>as data</value></Data></ExtendedData><Point><coordinates>1,2</coordinates></Point></Placemark>
</Folder></Document></kml>`,
	"names.kml": `<kml><Document><name>a</name><Placemark><Point><coordinates>1,2</coordinates></Point></Placemark>
<Folder><name>A</name><Placemark><Point><coordinates>1,2</coordinates></Point></Placemark></Folder>
<Folder><name>a</name><Placemark><Point><coordinates>3,4</coordinates></Point></Placemark></Folder>
<Folder><name>a (#2)</name><Placemark><Point><coordinates>5,6</coordinates></Point></Placemark></Folder></Document></kml>`,
	"lone.kml": `<kml xmlns="http://www.opengis.net/kml/2.2"><Placemark><name>u</name><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark></kml>`,
	"latin1.kml": "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<kml xmlns=\"http://www.opengis.net/kml/2.2\"><Document><Folder><name>caf\xe9s</name>" +
		"<Placemark><name>Zo\xeb</name><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 1,1 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark></Folder>" +
		"<Folder><name>second</name><Placemark><name>b</name><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 2,0 2,2 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark></Folder></Document></kml>",
}
