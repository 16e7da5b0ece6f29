"""What QGIS sees of a geoingest database (cmd/geoingest/qgis_test.go).

Run headless (QT_QPA_PLATFORM=offscreen) with the connection in the
environment (PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD) and the PNG to
render as argv[1]. Prints one JSON object: the spatial layers QGIS lists in
the public schema, the typed view's field types, feature count, the features
a bounding-box request returns, and whether the PNG has drawn pixels.
"""
import json
import os
import sys

from qgis.core import (QgsApplication, QgsDataSourceUri, QgsFeatureRequest, QgsMapSettings,
                       QgsMapRendererParallelJob, QgsProviderRegistry, QgsRectangle, QgsVectorLayer,
                       QgsAbstractDatabaseProviderConnection)
from qgis.PyQt.QtCore import QSize
from qgis.PyQt.QtGui import QColor

app = QgsApplication([], False)
app.initQgis()
out = {}


def uri_of(table, key="id"):
    u = QgsDataSourceUri()
    u.setConnection(os.environ["PGHOST"], os.environ["PGPORT"], os.environ["PGDATABASE"],
                    os.environ["PGUSER"], os.environ.get("PGPASSWORD", ""))
    if table:
        u.setDataSource("public", table, "geom", "", key)
    return u


md = QgsProviderRegistry.instance().providerMetadata("postgres")
conn = md.createConnection(uri_of(None).uri(False), {})
tables = conn.tables("public", QgsAbstractDatabaseProviderConnection.Vector)
out["layers"] = sorted(t.tableName() for t in tables)
stored = conn.tables("geoingest_store", QgsAbstractDatabaseProviderConnection.Vector)
out["storage_layers"] = sorted(t.tableName() for t in stored)

layer = QgsVectorLayer(uri_of("geoingest_typed_parcels").uri(False), "typed", "postgres")
out["valid"] = layer.isValid()
out["count"] = layer.featureCount()
out["fields"] = {f.name(): f.typeName() + "/" + str(f.type()) for f in layer.fields()}
out["crs"] = layer.crs().authid()
apn = {}
for f in layer.getFeatures():
    apn[f["feature_index"]] = [f["apn"], str(f["owner_id"]), str(f["assessed"])]
out["apn"] = apn
req = QgsFeatureRequest().setFilterRect(QgsRectangle(13.0, 52.0, 13.0015, 52.0015))
out["bbox"] = sorted(f["feature_index"] for f in layer.getFeatures(req))

settings = QgsMapSettings()
settings.setLayers([layer])
settings.setExtent(layer.extent())
settings.setOutputSize(QSize(256, 256))
settings.setBackgroundColor(QColor(255, 255, 255))
job = QgsMapRendererParallelJob(settings)
job.start()
job.waitForFinished()
img = job.renderedImage()
img.save(sys.argv[1], "png")
white = QColor(255, 255, 255).rgb()
out["drawn_pixels"] = sum(1 for x in range(0, 256, 2) for y in range(0, 256, 2) if img.pixel(x, y) != white)
print(json.dumps(out))
app.exitQgis()
