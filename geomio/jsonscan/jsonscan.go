package jsonscan

import (
	"math"
	"strconv"
	"unsafe"
)

// A hand-written JSON scanner for the fast GeoJSON decoder. It accepts
// exactly the grammar encoding/json accepts (RFC 8259: strings without raw
// control characters and with valid escapes, strict numbers, the three
// literals), over a byte slice that holds the whole value. Every function
// takes the index of the first byte of its token and returns the index
// just past it, or -1 when the input is not what it expects: the fast
// decoder then hands the bytes to encoding/json, which decides whether
// they are valid and, if not, says why.

// maxFastDepth is how deep the scanner follows nested arrays and objects
// before giving up (encoding/json's own limit, 10000, is reached through
// the slow path).
const maxFastDepth = 512

// IsSpace reports whether c is JSON whitespace.
func IsSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t'
}

// SkipSpace returns the index of the first non-whitespace byte at or
// after i.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// strClass marks the bytes that end a run of plain string content: the
// quote, the backslash and the control characters JSON forbids raw.
var strClass = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// ScanString validates the string whose opening quote is b[i] and returns
// the index past its closing quote and whether it holds an escape.
func ScanString(b []byte, i int) (int, bool) {
	i++
	esc := false
	for {
		i = NextStringSpecial(b, i)
		if i >= len(b) {
			return -1, esc
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return -1, esc
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return -1, esc
				}
				i += 6
			default:
				return -1, esc
			}
		default: // a raw control character
			return -1, esc
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func IsDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber validates the JSON number starting at b[i].
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return -1
	}
	switch {
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && IsDigit(b[i]); i++ {
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !IsDigit(b[i]) {
			return -1
		}
		for i++; i < len(b) && IsDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !IsDigit(b[i]) {
			return -1
		}
		for i++; i < len(b) && IsDigit(b[i]); i++ {
		}
	}
	return i
}

// pow10 holds the powers of ten a float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// ParseNumber validates the JSON number starting at b[i] and returns its
// float64 value, correctly rounded as strconv.ParseFloat (and so
// encoding/json) rounds it. It returns -1 for an invalid number or one out
// of float64's range (which encoding/json refuses too).
func ParseNumber(b []byte, i int) (float64, int) {
	start := i
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	if i >= len(b) {
		return 0, -1
	}
	var mant uint64
	nd := 0 // digits accumulated in mant; more than 19 may have overflowed it
	switch c := b[i]; {
	case c == '0':
		i++
	case c-'1' < 9:
		s := i
		for ; i < len(b); i++ {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			mant = mant*10 + uint64(d)
		}
		nd = i - s
	default:
		return 0, -1
	}
	exp := 0
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		for ; i < len(b); i++ {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			mant = mant*10 + uint64(d)
		}
		if i == s {
			return 0, -1
		}
		nd += i - s
		exp = s - i
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		s := i
		e := 0
		for ; i < len(b); i++ {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			if e < 100000 {
				e = e*10 + int(d)
			}
		}
		if i == s {
			return 0, -1
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	// Clinger's fast path: a mantissa that float64 holds exactly, scaled by
	// an exactly held power of ten, is correctly rounded by one IEEE
	// multiplication or division; strconv takes the same path.
	if nd <= 19 && mant>>53 == 0 && exp >= -22 && exp <= 22 {
		f := float64(mant)
		if exp < 0 {
			f /= pow10[-exp]
		} else {
			f *= pow10[exp]
		}
		if neg {
			f = -f
		}
		return f, i
	}
	f, err := strconv.ParseFloat(unsafe.String(&b[start], i-start), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, -1
	}
	return f, i
}

// ScanLiteral validates the literal lit (true, false or null) at b[i].
func ScanLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// JsonSkipper validates JSON values and remembers whether it met
// whitespace inside them (so that a caller can tell whether a value is
// already compact).
type JsonSkipper struct {
	Space bool
}

func (s *JsonSkipper) ws(b []byte, i int) int {
	j := SkipSpace(b, i)
	if j != i {
		s.Space = true
	}
	return j
}

// Value validates the JSON value starting at b[i] (not whitespace).
func (s *JsonSkipper) Value(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; c {
	case '{':
		if depth >= maxFastDepth {
			return -1
		}
		i = s.ws(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return -1
			}
			if i, _ = ScanString(b, i); i < 0 {
				return -1
			}
			i = s.ws(b, i)
			if i >= len(b) || b[i] != ':' {
				return -1
			}
			i = s.ws(b, i+1)
			if i = s.Value(b, i, depth+1); i < 0 {
				return -1
			}
			i = s.ws(b, i)
			if i >= len(b) {
				return -1
			}
			if b[i] == '}' {
				return i + 1
			}
			if b[i] != ',' {
				return -1
			}
			i = s.ws(b, i+1)
		}
	case '[':
		if depth >= maxFastDepth {
			return -1
		}
		i = s.ws(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i = s.Value(b, i, depth+1); i < 0 {
				return -1
			}
			i = s.ws(b, i)
			if i >= len(b) {
				return -1
			}
			if b[i] == ']' {
				return i + 1
			}
			if b[i] != ',' {
				return -1
			}
			i = s.ws(b, i+1)
		}
	case '"':
		i, _ = ScanString(b, i)
		return i
	case 't':
		return ScanLiteral(b, i, "true")
	case 'f':
		return ScanLiteral(b, i, "false")
	case 'n':
		return ScanLiteral(b, i, "null")
	default:
		return scanNumber(b, i)
	}
}

// AppendCompact appends the valid JSON value v to dst without its
// insignificant whitespace, as json.Compact does.
func AppendCompact(dst, v []byte) []byte {
	inStr, esc := false, false
	start := 0
	for i, c := range v {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case IsSpace(c):
			dst = append(dst, v[start:i]...)
			start = i + 1
		}
	}
	return append(dst, v[start:]...)
}
