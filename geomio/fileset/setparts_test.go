//go:build cgo && !geoingest_nogdal

package fileset_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/stretchr/testify/require"
)

// TestMapInfoSetParts reads as geomio.Open does (the set's parts found
// through this package's rules), under geomio's names.
type Options = geomio.Options

var (
	Open         = geomio.Open
	IsInputError = geomio.IsInputError
)

const setPartsMIF = `Version 300
Charset "Neutral"
Delimiter ","
CoordSys Earth Projection 1, 104
Columns 1
  name Char(10)
Data

Region 1
  4
0 0
1 0
1 1
0 0
`

// TestMapInfoSetParts: a MapInfo file uploaded without a required part
// (a .mif without its .mid, a .tab without its .dat, .map or .id) is
// refused naming what is missing, as a loose shapefile without its .dbf
// is, on local disk as in a bucket; GDAL read such a .mif as features with
// every attribute null, and refused such a .tab as an unrecognised format.
func TestMapInfoSetParts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mif := filepath.Join(dir, "a.mif")
	require.NoError(t, os.WriteFile(mif, []byte(setPartsMIF), 0o644))
	_, err := Open(mif, Options{})
	require.ErrorContains(t, err, "missing .mid beside the .mif")
	require.True(t, IsInputError(err))

	tab := filepath.Join(dir, "b.TAB")
	require.NoError(t, os.WriteFile(tab, []byte("!table\n!version 300\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.map"), []byte{0}, 0o644))
	_, err = Open(tab, Options{})
	require.ErrorContains(t, err, "missing .dat and .id beside the .tab")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.MID"), []byte("\"x\"\n"), 0o644))
	r, err := Open(mif, Options{})
	if err == nil {
		r.Close()
	} else {
		require.NotContains(t, err.Error(), "missing .mid", "the .mid is found whatever its case")
	}
}
