package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// copyRows streams rows into table with one binary COPY. The rows are read
// and encoded on a goroutine of their own, which overlaps with the
// server's work on the rows already sent; the features never sit in
// memory beyond a 64 KiB buffer. With staged, the columns are the staging
// table's (feature_index, layer, properties, wkb); otherwise they are the
// feature table's (job_ref, feature_index, layer, properties, geom) and the
// geometry must be EWKB in EPSG:4326 (a MultiPolygon). freeze asks for
// COPY FREEZE, allowed because the table was created in this transaction.
//
// The table name is geoingest_staging or one that
// geoingest_create_job_table returned: never input. It returns the
// reader's own error when the rows stopped on one, so that its
// classification survives; a server error is classified by normaliseErr.
func copyRows(ctx context.Context, tx pgx.Tx, table string, staged, freeze bool, rows *featureRows) (int64, error) {
	cols := " (job_ref, feature_index, layer, properties, geom)"
	if staged {
		cols = " (feature_index, layer, properties, wkb)"
	}
	opts := " FROM STDIN (FORMAT binary)"
	if freeze {
		opts = " FROM STDIN (FORMAT binary, FREEZE)"
	}
	sql := "COPY " + pgx.Identifier{table}.Sanitize() + cols + opts

	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := bufio.NewWriterSize(pw, 1<<16)
		err := rows.encode(w, staged)
		if err == nil {
			err = w.Flush()
		}
		pw.CloseWithError(err) // nil: the reader sees EOF, the end of the COPY data
	}()
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, pr, sql)
	pr.CloseWithError(io.ErrClosedPipe) // stops the producer if the server gave up first
	<-done
	if rows.err != nil {
		return 0, rows.err
	}
	if err != nil {
		return 0, normaliseErr(fmt.Errorf("copy: %w", err))
	}
	return tag.RowsAffected(), nil
}

// pgCopySignature is the binary COPY header: signature, flags, extension.
var pgCopySignature = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// encode writes the binary COPY data for the rows Next yields: header,
// tuples, trailer. It returns a non-nil error only when writing failed or
// the rows stopped on an error (f.err); a switch to the staged path
// (f.switched) ends the data normally.
func (f *featureRows) encode(w *bufio.Writer, staged bool) error {
	if _, err := w.Write(pgCopySignature); err != nil {
		return err
	}
	var geomBuf bytes.Buffer
	for f.next(!staged) {
		row := &f.row
		geomBuf.Reset()
		if err := ewkb.Write(&geomBuf, ewkb.NDR, row.geom); err != nil {
			f.err = Permanentf("feature %d: encode geometry: %w", row.index, err)
			return f.err
		}
		if staged {
			putInt16(w, 4)
		} else {
			putInt16(w, 5)
			putInt32(w, 8)
			putInt64(w, f.ref)
		}
		putInt32(w, 8)
		putInt64(w, row.index)
		putInt32(w, int32(len(row.layer)))
		w.WriteString(row.layer)
		putInt32(w, int32(len(row.props)+1))
		w.WriteByte(1) // jsonb binary format version
		w.Write(row.props)
		if geomBuf.Len() > math.MaxInt32 {
			f.err = Permanentf("feature %d: geometry of %d bytes is too large", row.index, geomBuf.Len())
			return f.err
		}
		putInt32(w, int32(geomBuf.Len()))
		if _, err := w.Write(geomBuf.Bytes()); err != nil {
			return err
		}
	}
	if f.err != nil {
		return f.err
	}
	putInt16(w, -1)
	return nil
}

func putInt16(w *bufio.Writer, v int16) {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], uint16(v))
	w.Write(b[:])
}

func putInt32(w *bufio.Writer, v int32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(v))
	w.Write(b[:])
}

func putInt64(w *bufio.Writer, v int64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	w.Write(b[:])
}

// copyRow is one feature ready to be encoded.
type copyRow struct {
	index int64
	layer string
	props []byte
	geom  *geom.MultiPolygon
}
