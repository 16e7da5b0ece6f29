package geoparquet

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// maxPageHeader bounds the bytes of one page header, as Arrow's readers
// bound it by default (16 MiB): a header holds sizes, counts and at most a
// min and a max value.
const maxPageHeader = 16 << 20

// firstHeaderRead is how many bytes are read for a page header at first;
// a larger header (long statistics) is read again with more.
const firstHeaderRead = 4 << 10

// checkPages walks the page headers of one column chunk, the n bytes at
// base, as parquet-go will read them (header, then the page's compressed
// bytes, then the next header), and checks each against what parquet-go
// will allocate from it before reading a page: a buffer of its compressed
// size, then one of its uncompressed size to decompress into. A page's
// compressed size must fit in what is left of the chunk (so that buffer is
// bounded by bytes the file really holds), and its uncompressed size must
// be at most maxRatio times its compressed size, with a floor of 1 KiB
// (a *RatioError, the limit of the whole chunk applied to each page;
// maxRatio <= 0 checks nothing). parquet-go also sizes a page's level,
// offset and dictionary index buffers by the page's value count, which the
// format bounds only by its 32-bit field; so a page's count must be at
// least 0, at most what is left of the chunk's values (chunkValues, from
// the footer; a dictionary page at most all of them), and at most maxRatio
// times 8 values per byte of the page (one bit each, the densest a
// bit-packed page can be, with the same 1 KiB floor; a *RatioError). A
// header must decode within maxPageHeader bytes, inside the chunk. Only
// headers are read.
func checkPages(r io.ReaderAt, base, n, maxRatio int64, column string, chunkValues int64) error {
	var buf []byte
	var pos, values int64
	for page := 0; pos < n; page++ {
		var h format.PageHeader
		hlen, err := readPageHeader(r, base+pos, n-pos, &buf, &h)
		if err != nil {
			return fmt.Errorf("column %q, page %d (at byte %d): unreadable page header: %w", column, page, base+pos, err)
		}
		if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 {
			return fmt.Errorf("column %q, page %d: negative page size in its header", column, page)
		}
		size, left := int64(h.CompressedPageSize), n-pos-hlen
		if size > left {
			return fmt.Errorf("column %q, page %d: its header declares %d bytes but the column chunk holds %d more", column, page, size, left)
		}
		if maxRatio > 0 && int64(h.UncompressedPageSize) > maxRatio*max(size, 1<<10) {
			return &RatioError{Column: column, Page: page, Compressed: size, Uncompressed: int64(h.UncompressedPageSize), Max: maxRatio}
		}
		count, dict := pageValues(&h)
		if count < 0 {
			return fmt.Errorf("column %q, page %d: negative value count in its header", column, page)
		}
		if maxRatio > 0 && count > 8*maxRatio*max(size, 1<<10) {
			return &RatioError{Column: column, Page: page, Compressed: size, Values: count, Max: maxRatio}
		}
		rest := chunkValues - values
		if dict {
			rest = chunkValues
		}
		if count > rest {
			return fmt.Errorf("column %q, page %d: its header declares %d values but the column chunk holds %d", column, page, count, rest)
		}
		if !dict {
			values += count
		}
		pos += hlen + size
	}
	return nil
}

// readPageHeader decodes the page header at off, of at most left bytes
// (what is left of its chunk) and maxPageHeader, into h, and returns its
// length. *buf is reused between calls.
func readPageHeader(r io.ReaderAt, off, left int64, buf *[]byte, h *format.PageHeader) (int64, error) {
	bound := min(left, maxPageHeader)
	size := min(bound, firstHeaderRead)
	var proto thrift.CompactProtocol
	for {
		if int64(cap(*buf)) < size {
			*buf = make([]byte, size)
		}
		b := (*buf)[:size]
		if k, err := r.ReadAt(b, off); int64(k) < size {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		*h = format.PageHeader{}
		pr := proto.NewReaderFromBytes(b)
		err := thrift.NewDecoder(pr).Decode(h)
		if err == nil {
			return int64(pr.BytesRead()), nil
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if size >= bound {
			if bound == maxPageHeader {
				return 0, fmt.Errorf("more than %d bytes", maxPageHeader)
			}
			return 0, errors.New("it runs past the end of its column chunk")
		}
		size = min(bound, size*8)
	}
}

// pageValues is the value count a page header declares (0 for an index
// page), and whether it is a dictionary page.
func pageValues(h *format.PageHeader) (count int64, dict bool) {
	switch {
	case h.DictionaryPageHeader.Valid:
		return int64(h.DictionaryPageHeader.V.NumValues), true
	case h.DataPageHeader.Valid:
		return int64(h.DataPageHeader.V.NumValues), false
	case h.DataPageHeaderV2.Valid:
		v2 := h.DataPageHeaderV2.V
		if v2.NumValues < 0 || v2.NumRows < 0 || v2.NumNulls < 0 {
			return -1, false
		}
		return int64(max(v2.NumValues, v2.NumRows, v2.NumNulls)), false
	}
	return 0, false
}
