// Package geojson reads GeoJSON FeatureCollections, Features and bare
// geometries, and GeoJSON sequences (RFC 8142, newline-delimited): a
// splitter cuts the input into raw features and decoder goroutines decode
// them in batches (pipeline.go), handed out in file order.
package geojson
