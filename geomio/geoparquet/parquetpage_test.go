package geoparquet_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/require"
)

// withPageHeader returns the Parquet file good with the header of the
// first page of its first column chunk changed by edit, the rest of the
// file moved to fit the new header's length and the footer's offsets and
// the chunk's compressed size moved with it: a file whose footer is
// consistent and whose one page header says what edit made it say.
func withPageHeader(t testing.TB, good []byte, edit func(*format.PageHeader)) []byte {
	t.Helper()
	var proto thrift.CompactProtocol
	n := int(binary.LittleEndian.Uint32(good[len(good)-8:]))
	footerAt := len(good) - 8 - n
	var md format.FileMetaData
	require.NoError(t, thrift.Unmarshal(&proto, good[footerAt:len(good)-8], &md))
	cc := &md.RowGroups[0].Columns[0].MetaData
	base := cc.DataPageOffset
	if cc.DictionaryPageOffset != 0 {
		base = cc.DictionaryPageOffset
	}
	var h format.PageHeader
	pr := proto.NewReaderFromBytes(good[base:footerAt])
	require.NoError(t, thrift.NewDecoder(pr).Decode(&h))
	oldLen := int64(pr.BytesRead())
	edit(&h)
	hb, err := thrift.Marshal(&proto, &h)
	require.NoError(t, err)
	delta := int64(len(hb)) - oldLen
	move := func(off *int64) {
		if *off > base {
			*off += delta
		}
	}
	for i := range md.RowGroups {
		rg := &md.RowGroups[i]
		move(&rg.FileOffset)
		for j := range rg.Columns {
			c := &rg.Columns[j]
			move(&c.FileOffset)
			move(&c.OffsetIndexOffset)
			move(&c.ColumnIndexOffset)
			move(&c.MetaData.DataPageOffset)
			move(&c.MetaData.IndexPageOffset)
			move(&c.MetaData.DictionaryPageOffset)
			move(&c.MetaData.BloomFilterOffset)
		}
	}
	cc.TotalCompressedSize += delta
	footer, err := thrift.Marshal(&proto, &md)
	require.NoError(t, err)
	out := append([]byte(nil), good[:base]...)
	out = append(out, hb...)
	out = append(out, good[base+oldLen:footerAt]...)
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// TestGeoParquetHostilePageHeader: parquet-go allocates a page's buffers
// from its header (its compressed size, then its uncompressed size) before
// it reads the page, and the footer's checks bound whole column chunks,
// not pages. A page header that claims 1 GiB uncompressed is refused from
// the headers, before any page is read and without that allocation, as
// over --max-zip-ratio, naming the file, column and page; one that claims
// more compressed bytes than its chunk holds is refused as invalid. The
// same file with its header rewritten unchanged is read.
func TestGeoParquetHostilePageHeader(t *testing.T) {
	dir := t.TempDir()
	good := testfiles.GeoParquet(t, filepath.Join(dir, "good.parquet"), rows(
		testfiles.GeoParquetRow{Geometry: wkbOf(t, square), Properties: `{"a":1}`},
		testfiles.GeoParquetRow{Geometry: wkbOf(t, square), Properties: `{"a":2}`},
	), testfiles.GeoParquetOptions{})
	goodBytes, err := os.ReadFile(good)
	require.NoError(t, err)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}

	same := write("same.parquet", withPageHeader(t, goodBytes, func(*format.PageHeader) {}))
	_, fs, err := readAll(t, same, geomio.Options{})
	require.NoError(t, err, "the rewrite itself keeps the file readable")
	require.Len(t, fs, 2)

	huge := write("huge.parquet", withPageHeader(t, goodBytes, func(h *format.PageHeader) { h.UncompressedPageSize = 1 << 30 }))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, fs, err = readAll(t, huge, geomio.Options{})
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	require.True(t, geomio.IsLimitError(err), "%v", err)
	require.Contains(t, err.Error(), huge)
	require.Regexp(t, `column "[a-z_]+", page 0: a page of \d+ bytes declares 1073741824 uncompressed, more than 200 times its size`, err.Error())
	require.Contains(t, err.Error(), "max-zip-ratio")
	require.Empty(t, fs)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "no allocation of the declared size")

	long := write("long.parquet", withPageHeader(t, goodBytes, func(h *format.PageHeader) { h.CompressedPageSize = 1 << 30 }))
	runtime.ReadMemStats(&before)
	_, _, err = readAll(t, long, geomio.Options{})
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	require.Contains(t, err.Error(), long+": invalid GeoParquet")
	require.Regexp(t, `page 0: its header declares 1073741824 bytes but the column chunk holds \d+ more`, err.Error())
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "no allocation of the declared size")
}

// TestGeoParquetHostileValueCount: parquet-go sizes a page's level and
// value buffers (and a dictionary's index) by the value count in the
// page's header, which the format bounds only by its 32-bit field. A
// header that claims 2^31-1 values is refused from the headers, before any
// page is read and without that allocation: at most 8 values per byte of
// the page (one bit each) times --max-zip-ratio, and never more than its
// column chunk holds; a negative count is invalid. The first page is a
// dictionary page or a data page, v1 or v2: each header's count is
// checked.
func TestGeoParquetHostileValueCount(t *testing.T) {
	for _, v1 := range []bool{false, true} {
		t.Run(fmt.Sprintf("data page v1 %v", v1), func(t *testing.T) { testHostileValueCount(t, v1) })
	}
}

func testHostileValueCount(t *testing.T, v1 bool) {
	dir := t.TempDir()
	good := testfiles.GeoParquet(t, filepath.Join(dir, "good.parquet"), rows(
		testfiles.GeoParquetRow{Geometry: wkbOf(t, square), Properties: `{"a":1}`},
		testfiles.GeoParquetRow{Geometry: wkbOf(t, square), Properties: `{"a":2}`},
	), testfiles.GeoParquetOptions{DataPageV1: v1})
	goodBytes, err := os.ReadFile(good)
	require.NoError(t, err)
	setCount := func(n int32) func(h *format.PageHeader) {
		return func(h *format.PageHeader) {
			if h.DictionaryPageHeader.Valid {
				h.DictionaryPageHeader.V.NumValues = n
			}
			if h.DataPageHeader.Valid {
				h.DataPageHeader.V.NumValues = n
			}
			if h.DataPageHeaderV2.Valid {
				h.DataPageHeaderV2.V.NumValues = n
				h.DataPageHeaderV2.V.NumRows = n
			}
		}
	}
	for _, tc := range []struct {
		name  string
		count int32
		want  string
		limit bool
	}{
		{"huge", 1<<31 - 1, `page 0: a page of \d+ bytes declares 2147483647 values, more than 200 times 8 per byte`, true},
		{"more than the chunk", 3, `page 0: its header declares 3 values but the column chunk holds 2`, false},
		{"negative", -5, `page 0: negative value count in its header`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".parquet")
			require.NoError(t, os.WriteFile(p, withPageHeader(t, goodBytes, setCount(tc.count)), 0o644))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, fs, err := readAll(t, p, geomio.Options{})
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			require.Empty(t, fs)
			require.Contains(t, err.Error(), p)
			require.Regexp(t, tc.want, err.Error())
			require.Equal(t, tc.limit, geomio.IsLimitError(err), "%v", err)
			if tc.limit {
				require.Contains(t, err.Error(), "max-zip-ratio")
			}
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "no allocation of the declared count")
		})
	}
}
