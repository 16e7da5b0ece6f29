package ingest

// The casts as they were before they parsed from the bytes (a string per
// value): the reference of TestCastMatchesReference and FuzzCast, which
// check that the allocation-free casts give the same output and the same
// errors, bit for bit.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// isDecimal reports whether s is a JSON number (-?(0|[1-9]digits)(.digits)?
// ([eE][-+]?digits)?), which a numeric takes whole.
func refIsDecimal(s string) bool {
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
// out as JSON.
func (c mappedColumn) refCast(out []byte, raw json.RawMessage, present bool) ([]byte, error) {
	if !present || len(raw) == 0 || string(raw) == "null" {
		return append(out, "null"...), nil
	}
	var text string
	isString := raw[0] == '"'
	switch {
	case isString && len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0:
		text = string(raw[1 : len(raw)-1]) // no escape: the characters as they are
		if c.Trim || c.Type != TypeText {
			text = strings.TrimSpace(text)
		}
		if text == "" {
			return append(out, "null"...), nil
		}
	case isString:
		if err := json.Unmarshal(raw, &text); err != nil {
			return out, c.castErr(raw, "")
		}
		if c.Trim || c.Type != TypeText {
			text = strings.TrimSpace(text)
		}
		if text == "" {
			return append(out, "null"...), nil
		}
	case raw[0] == '{' || raw[0] == '[':
		return out, c.castErr(raw, ": an object or an array")
	default:
		text = string(raw) // a number's literal, true or false
	}
	switch c.Type {
	case TypeText:
		if strings.IndexByte(text, 0) >= 0 {
			return out, c.castErr(raw, ": a NUL character, which text cannot hold")
		}
		if c.Pad > 0 && len(text) < c.Pad && refAllDigits(text) {
			text = strings.Repeat("0", c.Pad-len(text)) + text
		}
		return appendJSONString(out, text), nil
	case TypeInt8:
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return out, c.castErr(raw, ": not a whole number within int8")
		}
		return append(out, strings.TrimLeft(text, "+")...), nil
	case TypeNumeric:
		if !refIsDecimal(text) {
			return out, c.castErr(raw, ": not a decimal number")
		}
		if !refNumericInRange(text) {
			return out, c.castErr(raw, ": beyond the numeric range stored (1000 digits before the point, 1000 after)")
		}
		return append(out, text...), nil
	case TypeBoolean:
		switch strings.ToLower(text) {
		case "true", "t", "yes", "y", "1":
			return append(out, "true"...), nil
		case "false", "f", "no", "n", "0":
			return append(out, "false"...), nil
		}
		return out, c.castErr(raw, ": not a boolean (true/false, yes/no, y/n, t/f, 1/0)")
	case TypeDate:
		layout := c.Format
		if layout == "" {
			layout = "2006-01-02"
		}
		if !isString {
			return out, c.castErr(raw, ": a date is text")
		}
		t, err := time.Parse(layout, text)
		if err != nil {
			return out, c.castErr(raw, " with format "+layout)
		}
		return appendJSONString(out, t.Format("2006-01-02")), nil
	case TypeTimestamptz:
		layout := c.Format
		if layout == "" {
			layout = time.RFC3339Nano
		}
		if !isString {
			return out, c.castErr(raw, ": a timestamp is text")
		}
		t, err := time.Parse(layout, text)
		if err != nil {
			return out, c.castErr(raw, " with format "+layout)
		}
		return appendJSONString(out, t.UTC().Format(time.RFC3339Nano)), nil
	}
	return out, c.castErr(raw, ": unknown type")
}

// numericInRange reports whether the decimal s (isDecimal) has at most
// NumericLimit digits before its point and after it, its exponent
// applied.
func refNumericInRange(s string) bool {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 10*NumericLimit || e < -10*NumericLimit {
			return false
		}
		mant, exp = s[:i], e
	}
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	intPart = strings.TrimLeft(intPart, "0")
	return len(intPart)+exp <= NumericLimit && len(frac)-exp <= NumericLimit
}

func refAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
