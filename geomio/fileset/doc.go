// Package fileset is the one owner of the rules of a file set: which files
// make up a shapefile or a MapInfo table beside its main file (case-
// insensitively), which are sidecars, and the GML schema parts.
package fileset
