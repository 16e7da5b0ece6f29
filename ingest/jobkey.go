package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JobKey returns the deterministic identity of a job:
//
//	sha256_hex(bucket + "\n" + UnquotePlus(rawKey) + "\n" + versionToken + "\n" + CanonicalJSON(params))
//
// It is byte-identical to the reference in docs/design.md (Python's
// urllib.parse.unquote_plus and json.dumps(sort_keys=True,
// separators=(",", ":"))), so that any tool can compute the same key.
func JobKey(bucket, rawKey, versionToken string, params any) (string, error) {
	canon, err := CanonicalJSON(params)
	if err != nil {
		return "", err
	}
	return jobKeyDecoded(bucket, UnquotePlus(rawKey), versionToken, canon), nil
}

// jobKeyDecoded is JobKey for a key that is already decoded and params that
// are already canonical.
func jobKeyDecoded(bucket, key, versionToken string, canonicalParams []byte) string {
	h := sha256.New()
	h.Write([]byte(bucket))
	h.Write([]byte{'\n'})
	h.Write([]byte(key))
	h.Write([]byte{'\n'})
	h.Write([]byte(versionToken))
	h.Write([]byte{'\n'})
	h.Write(canonicalParams)
	return hex.EncodeToString(h.Sum(nil))
}

// UnquotePlus decodes an object key as S3 event notifications encode it,
// exactly as Python's urllib.parse.unquote_plus does: '+' is a space, %XX
// is a byte, a '%' not followed by two hex digits is kept literally, and
// bytes that are not valid UTF-8 become U+FFFD (one per maximal invalid
// subsequence).
func UnquotePlus(s string) string {
	if !strings.ContainsAny(s, "+%") {
		return s
	}
	buf := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '+':
			buf = append(buf, ' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			buf = append(buf, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			buf = append(buf, c)
		}
	}
	return decodeUTF8Replace(buf)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// decodeUTF8Replace decodes b as UTF-8, replacing each maximal subpart of an
// ill-formed sequence with U+FFFD (Unicode's recommended practice, which
// Python's "replace" error handler follows).
func decodeUTF8Replace(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.WriteRune(r)
			i += size
			continue
		}
		// Invalid: consume the maximal subpart, i.e. the lead byte plus
		// the continuation bytes that a well-formed sequence could have
		// had at those positions.
		n := maximalSubpart(b[i:])
		sb.WriteRune(utf8.RuneError)
		i += n
	}
	return sb.String()
}

func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		x := b[n]
		if k == 0 {
			if x < lo || x > hi {
				break
			}
		} else if x < 0x80 || x > 0xBF {
			break
		}
		n++
	}
	return n
}

// CanonicalJSON encodes v (a value as encoding/json would marshal it) as
// Python's json.dumps(v, sort_keys=True, separators=(",", ":")) prints it:
// object keys sorted, no spaces, non-ASCII and control characters as
// lower-case \uXXXX escapes (surrogate pairs above U+FFFF), '<', '>' and
// '&' literal, integers as integers and floats in Python's repr form
// (1.0, 1e+16, 1.5e-05). Numbers keep the kind they were written with: a
// literal with '.', 'e' or 'E' is a float.
//
// Returns an error if v cannot be marshalled or holds NaN or an infinity.
func CanonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, generic); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ParseParams decodes a JSON object of job parameters, keeping number
// literals exact so that CanonicalJSON reproduces Python's output.
func ParseParams(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("params: trailing data after the JSON object")
	}
	if m == nil {
		return nil, fmt.Errorf("params: must be a JSON object")
	}
	return m, nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		return writeNumber(buf, string(x))
	case string:
		writeString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // byte order of UTF-8 is code point order
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonical json: unsupported type %T", v)
	}
	return nil
}

func writeNumber(buf *bytes.Buffer, lit string) error {
	if !strings.ContainsAny(lit, ".eE") {
		n, ok := new(big.Int).SetString(lit, 10)
		if !ok {
			return fmt.Errorf("canonical json: bad integer %q", lit)
		}
		buf.WriteString(n.String())
		return nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("canonical json: number %q is not a finite float", lit)
	}
	buf.WriteString(pythonFloatRepr(f))
	return nil
}

// pythonFloatRepr formats f as Python's repr(float) does: the shortest
// digits that round-trip, in fixed notation when the decimal exponent is in
// [-4, 16), otherwise in scientific notation with at least two exponent
// digits; a fixed-notation integer gets ".0".
func pythonFloatRepr(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	if exp >= -4 && exp < 16 {
		var s string
		switch {
		case exp < 0:
			s = "0." + strings.Repeat("0", -exp-1) + digits
		case exp+1 >= len(digits):
			s = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
		default:
			s = digits[:exp+1] + "." + digits[exp+1:]
		}
		return sign + s
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
}

const hexDigits = "0123456789abcdef"

// writeString writes s as Python's json.dumps with ensure_ascii=True does.
func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			buf.WriteString(`\"`)
		case r == '\\':
			buf.WriteString(`\\`)
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\r':
			buf.WriteString(`\r`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r == '\b':
			buf.WriteString(`\b`)
		case r == '\f':
			buf.WriteString(`\f`)
		case r >= 0x20 && r <= 0x7e:
			buf.WriteByte(byte(r))
		case r > 0xffff:
			r -= 0x10000
			writeU(buf, 0xd800|(r>>10)&0x3ff)
			writeU(buf, 0xdc00|r&0x3ff)
		default:
			writeU(buf, r)
		}
	}
	buf.WriteByte('"')
}

func writeU(buf *bytes.Buffer, r rune) {
	buf.WriteString(`\u`)
	buf.WriteByte(hexDigits[r>>12&0xf])
	buf.WriteByte(hexDigits[r>>8&0xf])
	buf.WriteByte(hexDigits[r>>4&0xf])
	buf.WriteByte(hexDigits[r&0xf])
}
