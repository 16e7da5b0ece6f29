// Package jsonscan is geomio's JSON tokeniser: the byte-class tables and the
// SWAR scans that find the next quote or structural byte, skipping strings
// and nested values without decoding them, and the strict scanners of
// strings, numbers and literals that the GeoJSON decoder, the limits and the
// Z/M check share.
package jsonscan
