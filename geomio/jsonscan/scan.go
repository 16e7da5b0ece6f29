package jsonscan

// StructClass classifies the bytes that matter to finding where an array
// or object ends: 1 a quote, 2 an opening bracket, 3 a closing one.
var StructClass = func() (t [256]uint8) {
	t['"'] = 1
	t['['], t['{'] = 2, 2
	t[']'], t['}'] = 3, 3
	return t
}()

// QuoteOrBackslash marks the bytes that end a run of string content.
var QuoteOrBackslash = func() (t [256]bool) {
	t['"'], t['\\'] = true, true
	return t
}()

// SkipStringRaw returns the index past the string whose opening quote is
// b[i], or -1 if b ends first. It does not validate the string.
func SkipStringRaw(b []byte, i int) int {
	i++
	for {
		if i = NextQuoteOrBackslash(b, i); i >= len(b) {
			return -1
		}
		if b[i] == '"' {
			return i + 1
		}
		i += 2 // a backslash and the byte it escapes
	}
}

// StringEnd returns the index past the string whose opening quote is
// b[i] and whether it holds an escape, or -1 if b ends first. Like
// SkipStringRaw it does not validate: for a value already known to be
// JSON (a reader's properties) it finds the end at SWAR speed.
func StringEnd(b []byte, i int) (int, bool) {
	escaped := false
	i++
	for {
		if i = NextQuoteOrBackslash(b, i); i >= len(b) {
			return -1, escaped
		}
		if b[i] == '"' {
			return i + 1, escaped
		}
		escaped = true
		i += 2 // a backslash and the byte it escapes
	}
}

// SkipValue returns the index past the JSON value at b[i] (not
// whitespace), without validating it: a string (SkipStringRaw), an array
// or object (SkipNested), else a number or literal, which ends at the
// first comma, closing bracket or whitespace, or at len(b). -1 when a
// string, array or object is not closed before b ends. For a value
// already known to be JSON (a reader's properties) it is where the value
// ends; a scalar of no bytes (b[i] a comma) ends at i.
func SkipValue(b []byte, i int) int {
	switch StructClass[b[i]] {
	case 1:
		return SkipStringRaw(b, i)
	case 2:
		return SkipNested(b, i)
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\n', '\t', '\r':
			return i
		}
	}
	return i
}

// SkipNested returns the index past the array or object that opens at
// b[i], or -1 if b ends first. It does not validate: it counts brackets
// outside strings, so for valid JSON it finds the end of the value.
func SkipNested(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch StructClass[b[i]] {
		case 0:
			i = NextStructural(b, i+1)
		case 1:
			if i = SkipStringRaw(b, i); i < 0 {
				return -1
			}
		case 2:
			depth++
			i++
		case 3:
			depth--
			i++
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// ScalarEnd returns the index past the number or literal at b[i], where
// encoding/json's scanner ends it (a valid number or literal ends at the
// first byte that cannot continue it, whatever that byte is), or -1 if b
// ends first and more input may follow (eof false). Where no valid value
// starts at b[i], the element is cut at the first byte that cannot be
// part of a number or literal (at least one byte): it is not a feature,
// and the decoder reports it.
func ScalarEnd(b []byte, i int, eof bool) int {
	j := i
	for j < len(b) && IsScalarByte(b[j]) {
		j++
	}
	if j == len(b) && !eof {
		return -1
	}
	var end int
	switch c := b[i]; {
	case c == '-' || IsDigit(c):
		end = scanNumber(b[:j], i)
	case c == 't':
		end = ScanLiteral(b, i, "true")
	case c == 'f':
		end = ScanLiteral(b, i, "false")
	case c == 'n':
		end = ScanLiteral(b, i, "null")
	default:
		end = -1
	}
	if end < 0 {
		end = max(j, i+1)
	}
	return end
}

// IsScalarByte reports whether c can be part of a JSON number or literal.
func IsScalarByte(c byte) bool {
	return 'a' <= c && c <= 'z' || IsDigit(c) || c == '-' || c == '+' || c == '.' || c == 'E'
}
