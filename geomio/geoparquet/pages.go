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
// maxRatio <= 0 checks nothing). A header must decode within maxPageHeader
// bytes, inside the chunk. Only headers are read.
func checkPages(r io.ReaderAt, base, n, maxRatio int64, column string) error {
	var buf []byte
	var pos int64
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
