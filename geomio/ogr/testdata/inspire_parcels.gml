<?xml version="1.0" encoding="UTF-8"?>
<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2"
  xmlns:cp="http://inspire.ec.europa.eu/schemas/cp/4.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://inspire.ec.europa.eu/schemas/cp/4.0 https://inspire.ec.europa.eu/schemas/cp/4.0/CadastralParcels.xsd"
  numberMatched="2" numberReturned="2">
  <wfs:member>
    <cp:CadastralParcel gml:id="p1">
      <cp:areaValue uom="m2">10000</cp:areaValue>
      <cp:geometry><gml:MultiSurface gml:id="g1" srsName="http://www.opengis.net/def/crs/EPSG/0/25832"><gml:surfaceMember><gml:Polygon gml:id="g1p">
        <gml:exterior><gml:LinearRing><gml:posList>500000 5500000 500100 5500000 500100 5500100 500000 5500100 500000 5500000</gml:posList></gml:LinearRing></gml:exterior>
      </gml:Polygon></gml:surfaceMember></gml:MultiSurface></cp:geometry>
      <cp:label>1/1</cp:label>
      <cp:nationalCadastralReference>DE-1</cp:nationalCadastralReference>
      <cp:referencePoint><gml:Point gml:id="r1" srsName="http://www.opengis.net/def/crs/EPSG/0/25832"><gml:pos>500050 5500050</gml:pos></gml:Point></cp:referencePoint>
    </cp:CadastralParcel>
  </wfs:member>
  <wfs:member>
    <cp:CadastralParcel gml:id="p2">
      <cp:areaValue uom="m2">20000</cp:areaValue>
      <cp:geometry><gml:MultiSurface gml:id="g2" srsName="http://www.opengis.net/def/crs/EPSG/0/25832"><gml:surfaceMember><gml:Polygon gml:id="g2p">
        <gml:exterior><gml:LinearRing><gml:posList>500100 5500000 500300 5500000 500300 5500100 500100 5500100 500100 5500000</gml:posList></gml:LinearRing></gml:exterior>
      </gml:Polygon></gml:surfaceMember></gml:MultiSurface></cp:geometry>
      <cp:label>1/2</cp:label>
      <cp:nationalCadastralReference>DE-2</cp:nationalCadastralReference>
      <cp:referencePoint><gml:Point gml:id="r2" srsName="http://www.opengis.net/def/crs/EPSG/0/25832"><gml:pos>500200 5500050</gml:pos></gml:Point></cp:referencePoint>
    </cp:CadastralParcel>
  </wfs:member>
</wfs:FeatureCollection>
