package shapefile

import (
	"github.com/geoingest/geoingest/geomio/internal/hint"

	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/geoingest/geoingest/geomio/internal/core"
	"golang.org/x/text/encoding"
)

// go-shp v0.1.1 reads DBF attributes as raw strings: it ignores the .cpg
// and the language driver id, does not type the fields and does not report
// deleted records, so geomio reads the DBF itself.

// dbfField is one field descriptor.
type dbfField struct {
	name     string
	typ      byte
	length   int
	decimals int
	offset   int // within the record, after the deletion flag
}

// dbfReader reads the records of a DBF table one at a time.
type dbfReader struct {
	file     string
	r        *bufio.Reader
	n        int // records in the header
	recLen   int
	fields   []dbfField
	enc      encoding.Encoding // nil for UTF-8
	unnamed  bool              // neither a .cpg nor the language driver id names enc
	encName  string
	rec      []byte
	read     int
	dec      *encoding.Decoder
	nameJSON [][]byte // field names, JSON-quoted
	props    []byte   // properties' buffer, reused record after record
	members  []int32  // where props' members are (core.Feature.Members)
}

// ldidCodePages maps the DBF language driver id (header byte 29) to a code
// page name.
var ldidCodePages = map[byte]string{
	0x01: "437", 0x02: "850", 0x03: "1252", 0x57: "1252", 0x58: "1252", 0x59: "1252",
	0x13: "932", 0x4D: "936", 0x4E: "949", 0x4F: "950", 0x26: "866", 0x65: "866",
	0x64: "852", 0x66: "865", 0x7B: "932", 0x7A: "936", 0x78: "950", 0x79: "949",
	0xC8: "1250", 0xC9: "1251", 0xCA: "1254", 0xCB: "1253", 0xCC: "1257",
	0x7D: "1255", 0x7E: "1256",
}

// OpenDBF reads the DBF header from r. The encoding is the .cpg's (cpg,
// if non-empty), else the language driver id's, else defaultEnc, else
// UTF-8.
func OpenDBF(file string, r io.Reader, cpg, defaultEnc string, maxRecord int64) (*dbfReader, error) {
	d := &dbfReader{file: file, r: bufio.NewReaderSize(r, 1<<16)}
	var h [32]byte
	if _, err := io.ReadFull(d.r, h[:]); err != nil {
		return nil, &core.Error{File: file, Problem: "truncated dbf header", Err: err}
	}
	d.n = int(binary.LittleEndian.Uint32(h[4:8]))
	headerLen := int(binary.LittleEndian.Uint16(h[8:10]))
	d.recLen = int(binary.LittleEndian.Uint16(h[10:12]))
	if d.n < 0 || headerLen < 33 || d.recLen < 1 || int64(d.recLen) > maxRecord {
		return nil, &core.Error{File: file, Problem: fmt.Sprintf("invalid dbf header (records %d, header %d bytes, record %d bytes)", d.n, headerLen, d.recLen)}
	}
	var err error
	switch {
	case strings.TrimSpace(cpg) != "":
		d.enc, d.encName, err = core.EncodingByName(cpg)
	case ldidCodePages[h[29]] != "":
		d.enc, d.encName, err = core.EncodingByName(ldidCodePages[h[29]])
	default:
		d.enc, d.encName, err = core.EncodingByName(defaultEnc)
		d.unnamed = true
	}
	if err != nil {
		return nil, &core.Error{File: file, Problem: "text encoding", Err: err}
	}
	if d.enc != nil {
		d.dec = d.enc.NewDecoder()
	}
	// Field descriptors, up to the 0x0D terminator.
	rest := make([]byte, headerLen-32)
	if _, err := io.ReadFull(d.r, rest); err != nil {
		return nil, &core.Error{File: file, Problem: "truncated dbf header", Err: err}
	}
	offset := 0
	// Like GDAL, a header too short for another descriptor ends the list
	// even without the terminator (some writers put 0x00 or 0x0A there).
	for i := 0; i+32 <= len(rest) && rest[i] != 0x0D; i += 32 {
		fd := rest[i : i+32]
		rawName := fd[:11]
		if j := bytes.IndexByte(rawName, 0); j >= 0 {
			rawName = rawName[:j]
		}
		name, err := d.Decode(bytes.TrimSpace(rawName))
		if err != nil {
			return nil, &core.Error{File: file, Problem: fmt.Sprintf("field %d name", len(d.fields)), Err: err}
		}
		f := dbfField{name: name, typ: fd[11], length: int(fd[16]), decimals: int(fd[17]), offset: 1 + offset}
		if f.typ == 'C' {
			f.length += int(fd[17]) << 8 // long character fields
			f.decimals = 0
		}
		offset += f.length
		d.fields = append(d.fields, f)
		d.nameJSON = append(d.nameJSON, core.AppendJSONString(nil, name))
	}
	if 1+offset > d.recLen {
		return nil, &core.Error{File: file, Problem: fmt.Sprintf("dbf fields need %d bytes but records have %d", 1+offset, d.recLen)}
	}
	d.rec = make([]byte, d.recLen)
	return d, nil
}

// Decode returns b decoded to UTF-8, or an error if b is not valid text in
// the table's encoding: invalid bytes never silently become U+FFFD.
func (d *dbfReader) Decode(b []byte) (string, error) {
	if d.enc == nil {
		if !utf8.Valid(b) {
			return "", errors.New("invalid utf-8")
		}
		return string(b), nil
	}
	out, err := d.dec.Bytes(b)
	if err != nil {
		return "", fmt.Errorf("invalid %s: %w", d.encName, err)
	}
	if bytes.ContainsRune(out, utf8.RuneError) {
		return "", fmt.Errorf("bytes not defined in %s", d.encName)
	}
	return string(out), nil
}

// Next reads the next record. It returns deleted=true for a record marked
// deleted, and io.EOF after the last record the header announces.
func (d *dbfReader) Next() (deleted bool, err error) {
	if d.read >= d.n {
		return false, io.EOF
	}
	if _, err := io.ReadFull(d.r, d.rec); err != nil && len(d.fields) > 0 {
		return false, &core.Error{File: d.file, Problem: fmt.Sprintf("record %d: truncated dbf (header announces %d records)", d.read, d.n), Err: err}
	}
	d.read++
	// Like GDAL, only '*' marks a deleted record; a table without fields
	// may end early (the record count is still the header's).
	return d.rec[0] == '*', nil
}

// Properties renders the current record as a JSON object.
//
// The bytes are valid until the next call (as a Reader's Feature is until
// its next Next).
func (d *dbfReader) Properties() ([]byte, error) {
	out := append(d.props[:0], '{')
	members := d.members[:0]
	for i, f := range d.fields {
		if i > 0 {
			out = append(out, ',')
		}
		ks := len(out)
		out = append(out, d.nameJSON[i]...)
		out = append(out, ':')
		vs := len(out)
		var err error
		out, err = d.appendValue(out, f, d.rec[f.offset:f.offset+f.length])
		members = append(members, int32(ks), int32(vs), int32(len(out)))
		if err != nil {
			code := ""
			if d.unnamed {
				code = core.CodeEncoding
				// Never guess: only the uploader knows the encoding.
				err = fmt.Errorf("%w; the file names no text encoding (no .cpg, no language driver id), so it was read as %s: "+
					"give its encoding %s, for example windows-1252", err, d.encName, hint.Give(hint.Encoding))
			}
			return nil, &core.Error{File: d.file, Problem: fmt.Sprintf("record %d field %q", d.read-1, f.name), Err: err, Code: code}
		}
	}
	out = append(out, '}')
	d.props, d.members = out, members
	return out, nil
}

// Members is where the members of the record Properties last rendered
// are (core.Feature.Members), valid as its bytes are.
func (d *dbfReader) Members() []int32 { return d.members }

func (d *dbfReader) appendValue(out []byte, f dbfField, raw []byte) ([]byte, error) {
	switch f.typ {
	case 'C':
		b := trimRightSpaceNUL(raw)
		if d.enc == nil {
			// UTF-8: validated and escaped in place, no copy.
			if !utf8.Valid(b) {
				return nil, errors.New("invalid utf-8")
			}
			return core.AppendJSONString(out, b), nil
		}
		s, err := d.Decode(b)
		if err != nil {
			return nil, err
		}
		return core.AppendJSONString(out, s), nil
	case 'N', 'F':
		// Trimmed and parsed as bytes: no string is made of a valid
		// number (a record has many).
		s := bytes.TrimSpace(trimNUL(raw))
		if len(s) == 0 || allStars(s) || (len(s) == 1 && (s[0] == '-' || s[0] == '.')) {
			return append(out, "null"...), nil
		}
		if f.typ == 'N' && f.decimals == 0 {
			if v, ok := parseInt64(s); ok {
				return strconv.AppendInt(out, v, 10), nil
			}
		}
		if o, ok := appendShortDecimal(out, s); ok {
			return o, nil
		}
		v, err := parseFloat(s)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("invalid number %q", s)
		}
		return strconv.AppendFloat(out, v, 'g', -1, 64), nil
	case 'L':
		switch strings.TrimSpace(string(raw)) {
		case "T", "t", "Y", "y":
			return append(out, "true"...), nil
		case "F", "f", "N", "n":
			return append(out, "false"...), nil
		}
		return append(out, "null"...), nil
	case 'D':
		s := strings.TrimSpace(string(trimNUL(raw)))
		if s == "" || s == "00000000" {
			return append(out, "null"...), nil
		}
		if len(s) == 8 && strings.Trim(s, "0123456789") == "" {
			return core.AppendJSONString(out, s[:4]+"-"+s[4:6]+"-"+s[6:]), nil
		}
		return nil, fmt.Errorf("invalid date %q", s)
	case 'I':
		if len(raw) != 4 {
			return nil, fmt.Errorf("integer field of %d bytes", len(raw))
		}
		return strconv.AppendInt(out, int64(int32(binary.LittleEndian.Uint32(raw))), 10), nil
	case 'M':
		// Memo blocks live in a .dbt/.fpt file that shapefiles do not carry.
		return append(out, "null"...), nil
	}
	return nil, fmt.Errorf("unsupported dbf field type %q", f.typ)
}

// trimRightSpaceNUL is bytes.TrimRight(b, " \x00") without building a
// character set on every call (a text field is trimmed per record): a
// text field is mostly padding, so it drops 8 bytes of spaces and NULs at
// a time (a word whose every byte is 0x20 or 0x00 has no other bit set),
// then the rest one by one.
func trimRightSpaceNUL(b []byte) []byte {
	for len(b) >= 8 && binary.LittleEndian.Uint64(b[len(b)-8:])&^0x2020202020202020 == 0 {
		b = b[:len(b)-8]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	return b
}

// allStars reports whether b is all '*' (a number field's overflow).
func allStars(b []byte) bool {
	for _, c := range b {
		if c != '*' {
			return false
		}
	}
	return true
}

// parseInt64 is strconv.ParseInt(string(b), 10, 64) without the string:
// an optional sign, then decimal digits, in range.
func parseInt64(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg, b = b[0] == '-', b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	for len(b) > 1 && b[0] == '0' { // leading zeros count for nothing
		b = b[1:]
	}
	if len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0') // 19 digits cannot overflow a uint64
	}
	switch {
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	case neg && u <= 1<<63:
		return -int64(u), true // -(1<<63) wraps to itself: MinInt64
	}
	return 0, false
}

// appendShortDecimal appends what strconv.AppendFloat(out,
// ParseFloat(s), 'g', -1, 64) appends for s, a plain decimal
// (-?digits[.digits]) of at most 15 significant digits whose value v is
// zero or 1e-4 <= |v| < 1e6, without the float: a decimal of at most 15
// significant digits is the shortest one that reads back as its float
// (float64 holds 15 decimal digits), and in that range 'g' writes it with
// no exponent. ok is false for any other s, which the caller converts.
// FuzzDBFValueAsBefore holds it to the conversion.
func appendShortDecimal(out, s []byte) ([]byte, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	intEnd := 0
	for intEnd < len(s) && s[intEnd] >= '0' && s[intEnd] <= '9' {
		intEnd++
	}
	if intEnd == 0 {
		return out, false
	}
	frac := s[intEnd:]
	if len(frac) > 0 {
		if frac[0] != '.' || len(frac) == 1 {
			return out, false
		}
		frac = frac[1:]
		for _, c := range frac {
			if c < '0' || c > '9' {
				return out, false
			}
		}
	}
	intPart := s[:intEnd]
	// The significant digits: intPart's without its leading zeros, then
	// frac's; dp is where the point falls among them.
	for len(intPart) > 0 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	dp := len(intPart)
	lead := 0 // frac's zeros before its first digit, when intPart is zero
	if dp == 0 {
		for lead < len(frac) && frac[lead] == '0' {
			lead++
		}
	}
	last := len(frac) // frac's digits up to its last non-zero one
	for last > 0 && frac[last-1] == '0' {
		last--
	}
	if last < lead {
		last = lead
	}
	nd := dp + last - lead
	if dp == 0 {
		dp = -lead
	} else if last == 0 {
		// An integer: its own trailing zeros are not significant.
		t := len(intPart)
		for t > 0 && intPart[t-1] == '0' {
			t--
		}
		nd = t
	}
	if nd == 0 { // zero, signed as ParseFloat reads it
		if neg {
			return append(out, '-', '0'), true
		}
		return append(out, '0'), true
	}
	if nd > 15 || dp-1 < -4 || dp-1 >= 6 {
		return out, false
	}
	if neg {
		out = append(out, '-')
	}
	if dp <= 0 {
		out = append(out, '0', '.')
		for range -dp {
			out = append(out, '0')
		}
		return append(out, frac[lead:last]...), true
	}
	out = append(out, intPart...)
	if last > 0 {
		out = append(out, '.')
		out = append(out, frac[:last]...)
	}
	return out, true
}

// parseFloat is strconv.ParseFloat(string(b), 64); the string, which does
// not outlive the call, is made on the stack for a field's few bytes.
func parseFloat(b []byte) (float64, error) {
	return strconv.ParseFloat(string(b), 64)
}

// trimNUL is bytes.Trim(b, "\x00"), likewise.
func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// describe is what d reads every record with, as text: the encoding,
// whether a .cpg or the header named it, the record length and each
// field's name, type, length, decimals and offset.
func (d *dbfReader) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dbf %q %t %d", d.encName, d.unnamed, d.recLen)
	for _, f := range d.fields {
		fmt.Fprintf(&b, " %q %c %d %d %d", f.name, f.typ, f.length, f.decimals, f.offset)
	}
	return b.String()
}
