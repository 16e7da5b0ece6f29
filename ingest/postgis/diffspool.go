package postgis

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/geoingest/geoingest/ingest/prepare"
	"github.com/jackc/pgx/v5"
)

// A diff write (diffwrite.go) sends a new version in two steps, so that
// the rows that did not change never cross to the server:
//
//  1. as the rows stream, each one's match columns go to the server with
//     one COPY into pg_temp.geoingest_version (its index, match key,
//     hashes, area, whether the server must see it, and where the spool
//     holds it), while the row itself, encoded as the feature table's
//     COPY tuple, is appended to the spool: an unlinked temporary file,
//     so that memory stays flat whatever the version's size;
//  2. once the server has said which rows it needs (geoingest_spooled),
//     those are read back from the spool, in spool order, and sent with a
//     second COPY into pg_temp.geoingest_incoming.
//
// The spool is removed when the write gate ends, committed or not.

// versionSpool is a version's encoded rows on local disk.
type versionSpool struct {
	f    *os.File
	w    *bufio.Writer
	size int64
	// extent of the version's geometries that the server need not see
	// (as written: EPSG:4326), for the guards; ok is false while no row
	// has one.
	extent [4]float64
	ok     bool
	// rows is how many rows were spooled, must how many of them the
	// server must see (measure, check or repair), area the sum of the
	// others' areas, in input order.
	rows, must int64
	area       float64
}

func newVersionSpool() (*versionSpool, error) {
	f, err := os.CreateTemp("", "geoingest-version-*.spool")
	if err != nil {
		return nil, ingest.Transientf("version spool: %w", err)
	}
	_ = os.Remove(f.Name()) // unlinked: the file goes with its descriptor
	return &versionSpool{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

func (s *versionSpool) Close() error { return s.f.Close() }

// versionCols are pg_temp.geoingest_version's columns that a version
// tuple fills.
const versionCols = " (feature_index, match_key, geom_hash, props_hash, area_m2, must, spool_off, spool_len)"

// versionTuple encodes a prepared feature for the version's two streams:
// the feature table's tuple under ref (featureTuple's, for the spool),
// then its match columns (versionCols but the spool's place, which only
// the emitter knows), each behind its length; then its geometry's bounds,
// and whether the server must see it, or else its area.
func versionTuple(ref int64, key []string, typed *typedCols, hashes bool) prepare.RowEncoder {
	sig := keySignature(key)
	return func(out []byte, f *prepare.Feature, p *prepare.Prepared) []byte {
		be := binary.BigEndian
		at := len(out)
		out = be.AppendUint32(out, 0)
		out, match, end, must := appendFeature(out, ref, f, p, key, sig, typed, hashes)
		be.PutUint32(out[at:], uint32(len(out)-at-4))

		// The match columns are computed once: the row's own, copied.
		at = len(out)
		out = be.AppendUint32(out, 0)
		out = be.AppendUint32(out, 8)
		out = be.AppendUint64(out, uint64(f.Index))
		out = append(out, out[match:end]...)
		if !p.Measured {
			out = be.AppendUint32(out, math.MaxUint32)
		} else {
			out = be.AppendUint32(out, 8)
			out = be.AppendUint64(out, math.Float64bits(p.Area))
		}
		out = be.AppendUint32(out, 1)
		if must {
			out = append(out, 1)
		} else {
			out = append(out, 0)
		}
		be.PutUint32(out[at:], uint32(len(out)-at-4))

		b := bounds(f)
		for _, v := range b {
			out = be.AppendUint64(out, math.Float64bits(v))
		}
		if must {
			return append(out, 1)
		}
		out = append(out, 0)
		return be.AppendUint64(out, math.Float64bits(p.Area))
	}
}

// bounds is the extent of f's coordinates (NaN when it has none).
func bounds(f *prepare.Feature) [4]float64 {
	b := [4]float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	if f.Geom == nil {
		return b
	}
	flat, stride := f.Geom.FlatCoords(), f.Geom.Stride()
	for i := 0; i+1 < len(flat); i += stride {
		x, y := flat[i], flat[i+1]
		if i == 0 {
			b = [4]float64{x, y, x, y}
			continue
		}
		b[0], b[1], b[2], b[3] = math.Min(b[0], x), math.Min(b[1], y), math.Max(b[2], x), math.Max(b[3], y)
	}
	return b
}

// copyVersion streams feats: the match columns into
// pg_temp.geoingest_version, the rows (under ref) into sp.
func copyVersion(ctx context.Context, tx pgx.Tx, sp *versionSpool, ref int64, key []string, typed *typedCols, hashes bool, feats *prepare.Features) error {
	enc := versionTuple(ref, key, typed, hashes)
	_, err := copyData(ctx, tx, "COPY pg_temp.geoingest_version"+versionCols+" FROM STDIN (FORMAT binary)", func(w *bufio.Writer) error {
		if _, err := w.Write(pgCopySignature); err != nil {
			return err
		}
		be := binary.BigEndian
		var hdr [2 + 3*4 + 8]byte
		if err := feats.Run(prepare.Direct, enc, func(out []byte) error {
			for len(out) > 0 {
				n := int(be.Uint32(out))
				row := out[4 : 4+n]
				out = out[4+n:]
				m := int(be.Uint32(out))
				cols := out[4 : 4+m]
				out = out[4+m:]
				var b [4]float64
				for i := range b {
					b[i] = math.Float64frombits(be.Uint64(out[8*i:]))
				}
				out = out[32:]
				sp.rows++
				if out[0] == 1 {
					// Measured (and maybe repaired) by the server: its
					// extent is taken from geoingest_incoming.
					sp.must++
					out = out[1:]
				} else {
					sp.grow(b)
					sp.area += math.Float64frombits(be.Uint64(out[1:]))
					out = out[9:]
				}

				off := sp.size
				if _, err := sp.w.Write(row); err != nil {
					return ingest.Transientf("version spool: %w", err)
				}
				sp.size += int64(n)
				// The tuple: its 8 fields, the 6 encoded, the spool's place.
				h := be.AppendUint16(hdr[:0], 8)
				if _, err := w.Write(h); err != nil {
					return err
				}
				if _, err := w.Write(cols); err != nil {
					return err
				}
				h = be.AppendUint32(hdr[:0], 8)
				h = be.AppendUint64(h, uint64(off))
				h = be.AppendUint32(h, 4)
				h = be.AppendUint32(h, uint32(n))
				if _, err := w.Write(h); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if err := sp.w.Flush(); err != nil {
			return ingest.Transientf("version spool: %w", err)
		}
		if _, err := w.Write([]byte{0xff, 0xff}); err != nil {
			return err
		}
		return w.Flush()
	}, feats.Err)
	return err
}

func (s *versionSpool) grow(b [4]float64) {
	if math.IsNaN(b[0]) {
		return
	}
	if !s.ok {
		s.extent, s.ok = b, true
		return
	}
	s.extent[0], s.extent[1] = math.Min(s.extent[0], b[0]), math.Min(s.extent[1], b[1])
	s.extent[2], s.extent[3] = math.Max(s.extent[2], b[2]), math.Max(s.extent[3], b[3])
}

// sendSpooled sends the spooled rows the server lists for what
// (geoingest_spooled: "must", "write" or "all") into
// pg_temp.geoingest_incoming, a page of at most spoolPage rows per COPY
// (a connection runs one statement at a time: the list is read before
// each COPY), and returns how many.
func sendSpooled(ctx context.Context, g *gate, sp *versionSpool, what string) (int64, error) {
	var sent int64
	after := int64(-1)
	for {
		places, err := g.q.Spooled(ctx, db.SpooledParams{What: what, After: after, N: spoolPage})
		if err != nil {
			return sent, fmt.Errorf("rows to send (%s): %w", what, normaliseErr(err))
		}
		if len(places) == 0 {
			return sent, nil
		}
		n, err := sendPlaces(ctx, g, sp, places)
		sent += n
		if err != nil || len(places) < spoolPage {
			return sent, err
		}
		after = places[len(places)-1].SpoolOff
	}
}

// spoolPage is how many rows one COPY of sendSpooled sends at most: the
// list of their places takes 16 bytes a row in memory.
const spoolPage = 1 << 18

// sendPlaces sends the spooled rows at places, in order, with one COPY.
func sendPlaces(ctx context.Context, g *gate, sp *versionSpool, places []db.SpooledRow) (int64, error) {
	return copyData(ctx, g.tx, "COPY pg_temp.geoingest_incoming"+featureColumns(g.typed)+" FROM STDIN (FORMAT binary)", func(w *bufio.Writer) error {
		if _, err := w.Write(pgCopySignature); err != nil {
			return err
		}
		c := sp.cursor()
		for _, pl := range places {
			if err := c.seek(pl.SpoolOff); err != nil {
				return err
			}
			if _, err := io.CopyN(w, c.br, int64(pl.SpoolLen)); err != nil {
				return ingest.Transientf("version spool: %w", err)
			}
			c.pos += int64(pl.SpoolLen)
		}
		if _, err := w.Write([]byte{0xff, 0xff}); err != nil {
			return err
		}
		return w.Flush()
	}, func() error { return nil })
}

// spoolCursor reads a spool's rows forward, in spool order.
type spoolCursor struct {
	r   *io.SectionReader
	br  *bufio.Reader
	pos int64 // the offset br reads next
}

func (s *versionSpool) cursor() *spoolCursor {
	r := io.NewSectionReader(s.f, 0, s.size)
	return &spoolCursor{r: r, br: bufio.NewReaderSize(r, 1<<16)}
}

// seek moves c forward to the spool offset off: past a short gap by
// reading, past a long one by seeking.
func (c *spoolCursor) seek(off int64) error {
	if off < c.pos {
		return errors.New("version spool: rows out of order")
	}
	if gap := off - c.pos; gap > 1<<20 {
		if _, err := c.r.Seek(off, io.SeekStart); err != nil {
			return err
		}
		c.br.Reset(c.r)
	} else if gap > 0 {
		if _, err := c.br.Discard(int(gap)); err != nil {
			return ingest.Transientf("version spool: %w", err)
		}
	}
	c.pos = off
	return nil
}

// A version in which most rows changed, with a table of its own, is
// written straight into that table (diffwrite.go): every spooled row the
// server has not seen yet, in spool order, under the job's own ref and
// with the feature id the match gave it (migration 0037). The server
// lists them (geoingest_diff_rewrite_list), a page at a time, and each
// page is one COPY.

// sendRewrite writes the spooled rows that the server has not seen yet
// into table, the job's own, under ref, and returns how many. Their
// columns are featureColumns', then feature_id.
func sendRewrite(ctx context.Context, g *gate, sp *versionSpool, table pgx.Identifier, ref int64) (int64, error) {
	cols := featureCols + g.typed.columns() + ", feature_id)"
	fields := uint16(featureFields + g.typed.n())
	if _, err := g.q.DiffRewriteList(ctx); err != nil {
		return 0, fmt.Errorf("rows to write: %w", normaliseErr(err))
	}
	var sent int64
	after := int64(-1)
	c := sp.cursor()
	for {
		page, err := g.q.DiffRewritePage(ctx, db.DiffRewritePageParams{After: after, N: spoolPage})
		if err != nil {
			return sent, fmt.Errorf("rows to write: %w", normaliseErr(err))
		}
		if len(page) == 0 {
			return sent, nil
		}
		n, err := copyData(ctx, g.tx, "COPY "+table.Sanitize()+cols+" FROM STDIN (FORMAT binary)", func(w *bufio.Writer) error {
			return writeRewrite(w, c, page, ref, fields)
		}, func() error { return nil })
		sent += n
		if err != nil || len(page) < spoolPage {
			return sent, err
		}
		after = page[len(page)-1].SpoolOff
	}
}

// writeRewrite writes the COPY data of one page: each spooled row (a
// feature table tuple of fields fields, featureTuple) with its field
// count one more, its job_ref replaced by ref and its feature id after it
// (NULL for an added row).
func writeRewrite(w *bufio.Writer, c *spoolCursor, page []db.DiffRewritePageRow, ref int64, fields uint16) error {
	if _, err := w.Write(pgCopySignature); err != nil {
		return err
	}
	be := binary.BigEndian
	var row []byte
	for _, pl := range page {
		if err := c.seek(pl.SpoolOff); err != nil {
			return err
		}
		n := int(pl.SpoolLen)
		if n < 14 {
			return fmt.Errorf("version spool: a row of %d bytes", n)
		}
		if cap(row) < n+12 {
			row = make([]byte, n, n+12)
		}
		row = row[:n]
		if _, err := io.ReadFull(c.br, row); err != nil {
			return ingest.Transientf("version spool: %w", err)
		}
		c.pos += int64(n)
		// The tuple starts with its field count, then job_ref: length 8
		// and the value.
		if be.Uint16(row) != fields || be.Uint32(row[2:]) != 8 {
			return errors.New("version spool: a row is not a feature tuple")
		}
		be.PutUint16(row, fields+1)
		be.PutUint64(row[6:], uint64(ref))
		if pl.Fid == 0 {
			row = be.AppendUint32(row, math.MaxUint32)
		} else {
			row = be.AppendUint32(row, 8)
			row = be.AppendUint64(row, uint64(pl.Fid))
		}
		if _, err := w.Write(row); err != nil {
			return err
		}
	}
	if _, err := w.Write([]byte{0xff, 0xff}); err != nil {
		return err
	}
	return w.Flush()
}
