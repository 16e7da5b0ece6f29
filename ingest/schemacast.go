package ingest

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// The casts of the typed schema (schema.go), lossless: a text keeps its
// characters (a code's leading zeros; a number's literal as written), an
// int8 is a whole number within int64 (1.5 and 1e3 do not cast), a numeric
// keeps its decimal digits (jsonb stores numbers as numeric, not float), a
// date or timestamp is parsed with the column's format. Missing, null and
// empty text are NULL; anything else that does not cast is an error.

// isDecimal reports whether s is a JSON number (-?(0|[1-9]digits)(.digits)?
// ([eE][-+]?digits)?), which a numeric takes whole.
func isDecimal[S string | []byte](s S) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}

// cast appends the column's value of raw (present: the field exists) to
// out as JSON. It reads the value from raw's bytes: no string is made of
// it, except for a timestamp (time.Parse keeps its value) or a string
// with escapes. TestCastMatchesReference and FuzzCast hold it to the
// string-based casts it replaced, output and errors bit for bit.
func (c mappedColumn) cast(out []byte, raw json.RawMessage, present bool) ([]byte, error) {
	if !present || len(raw) == 0 || string(raw) == "null" {
		return append(out, "null"...), nil
	}
	var text []byte
	isString := raw[0] == '"'
	switch {
	case isString && len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0:
		text = raw[1 : len(raw)-1] // no escape: the characters as they are
		if c.Trim || c.Type != TypeText {
			text = bytes.TrimSpace(text)
		}
		if len(text) == 0 {
			return append(out, "null"...), nil
		}
	case isString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return out, c.castErr(raw, "")
		}
		if c.Trim || c.Type != TypeText {
			s = strings.TrimSpace(s)
		}
		if s == "" {
			return append(out, "null"...), nil
		}
		text = []byte(s)
	case raw[0] == '{' || raw[0] == '[':
		return out, c.castErr(raw, ": an object or an array")
	default:
		text = raw // a number's literal, true or false
	}
	switch c.Type {
	case TypeText:
		if bytes.IndexByte(text, 0) >= 0 {
			return out, c.castErr(raw, ": a NUL character, which text cannot hold")
		}
		if c.Pad > 0 && len(text) < c.Pad && allDigits(text) {
			// Digits need no escape.
			out = append(out, '"')
			for range c.Pad - len(text) {
				out = append(out, '0')
			}
			out = append(out, text...)
			return append(out, '"'), nil
		}
		return appendJSONString(out, text), nil
	case TypeInt8:
		if !isInt64(text) {
			return out, c.castErr(raw, ": not a whole number within int8")
		}
		if text[0] == '+' {
			text = text[1:]
		}
		return append(out, text...), nil
	case TypeNumeric:
		if !isDecimal(text) {
			return out, c.castErr(raw, ": not a decimal number")
		}
		if !numericInRange(text) {
			return out, c.castErr(raw, ": beyond the numeric range stored (1000 digits before the point, 1000 after)")
		}
		return append(out, text...), nil
	case TypeBoolean:
		switch b, ok := parseBool(text); {
		case ok && b:
			return append(out, "true"...), nil
		case ok:
			return append(out, "false"...), nil
		}
		return out, c.castErr(raw, ": not a boolean (true/false, yes/no, y/n, t/f, 1/0)")
	case TypeDate:
		layout := c.Format
		if layout == "" {
			layout = dateLayout
		}
		if !isString {
			return out, c.castErr(raw, ": a date is text")
		}
		if layout == dateLayout {
			if !isDate(text) {
				return out, c.castErr(raw, " with format "+layout)
			}
			// time.Parse then Format with this layout give the text back.
			out = append(out, '"')
			out = append(out, text...)
			return append(out, '"'), nil
		}
		t, err := time.Parse(layout, string(text))
		if err != nil {
			return out, c.castErr(raw, " with format "+layout)
		}
		out = append(out, '"') // a formatted date needs no escape
		out = t.AppendFormat(out, dateLayout)
		return append(out, '"'), nil
	case TypeTimestamptz:
		layout := c.Format
		if layout == "" {
			layout = time.RFC3339Nano
		}
		if !isString {
			return out, c.castErr(raw, ": a timestamp is text")
		}
		t, err := time.Parse(layout, string(text))
		if err != nil {
			return out, c.castErr(raw, " with format "+layout)
		}
		out = append(out, '"') // RFC 3339 needs no escape
		out = t.UTC().AppendFormat(out, time.RFC3339Nano)
		return append(out, '"'), nil
	}
	return out, c.castErr(raw, ": unknown type")
}

// dateLayout is a date column's default format, and the format it is
// written in.
const dateLayout = "2006-01-02"

// isInt64 reports whether s is what strconv.ParseInt(s, 10, 64) takes: an
// optional sign, then decimal digits only, within int64.
func isInt64(s []byte) bool {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return false
	}
	var n uint64
	for _, d := range s {
		if d < '0' || d > '9' {
			return false
		}
		if n > (1<<63)/10 { // n*10 > 1<<63: out of range, and no wrap below
			return false
		}
		n = n*10 + uint64(d-'0')
		if n > 1<<63 {
			return false
		}
	}
	return n < 1<<63 || neg
}

// parseBool reads the booleans a boolean column takes, in any case
// (ASCII: strings.ToLower maps no other letter into these words).
func parseBool(s []byte) (value, ok bool) {
	if len(s) > 5 {
		return false, false
	}
	var buf [5]byte
	for i, c := range s {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(s)]) {
	case "true", "t", "yes", "y", "1":
		return true, true
	case "false", "f", "no", "n", "0":
		return false, true
	}
	return false, false
}

// isDate reports whether time.Parse(dateLayout, s) succeeds.
func isDate(s []byte) bool {
	_, _, _, ok := ParseDate(s)
	return ok
}

// ParseDate reads s as time.Parse reads it with the layout 2006-01-02
// (four digits of year, two of month from 1 to 12, two of day within the
// month, with dashes between), allocating nothing.
func ParseDate(s []byte) (year int, month time.Month, day int, ok bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, false
	}
	num := func(b []byte) (int, bool) {
		n := 0
		for _, d := range b {
			if d < '0' || d > '9' {
				return 0, false
			}
			n = n*10 + int(d-'0')
		}
		return n, true
	}
	y, ok1 := num(s[:4])
	m, ok2 := num(s[5:7])
	d, ok3 := num(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 {
		return 0, 0, 0, false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1]
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	if d > days {
		return 0, 0, 0, false
	}
	return y, time.Month(m), d, true
}

// NumericLimit is how many decimal digits a numeric column takes before
// and after the point (PostgreSQL's own limits are wider).
const NumericLimit = 1000

// numericInRange reports whether the decimal s (isDecimal) has at most
// NumericLimit digits before its point and after it, its exponent
// applied.
func numericInRange[S string | []byte](s S) bool {
	mant, exp := s, 0
	for i := 0; i < len(s); i++ {
		if s[i] != 'e' && s[i] != 'E' {
			continue
		}
		e, neg, j := 0, false, i+1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			neg = s[j] == '-'
			j++
		}
		if j == len(s) {
			return false
		}
		for ; j < len(s); j++ {
			if s[j] < '0' || s[j] > '9' {
				return false
			}
			if e = e*10 + int(s[j]-'0'); e > 10*NumericLimit {
				return false
			}
		}
		if neg {
			e = -e
		}
		mant, exp = s[:i], e
		break
	}
	if len(mant) > 0 && mant[0] == '-' {
		mant = mant[1:]
	}
	intPart, frac := mant, mant[len(mant):]
	for i := 0; i < len(mant); i++ {
		if mant[i] == '.' {
			intPart, frac = mant[:i], mant[i+1:]
			break
		}
	}
	for len(intPart) > 0 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	return len(intPart)+exp <= NumericLimit && len(frac)-exp <= NumericLimit
}

func allDigits[S string | []byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}
