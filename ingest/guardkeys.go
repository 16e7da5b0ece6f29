package ingest

import (
	"strconv"
)

// KeysReader is a LayerReader that records the property keys of every
// feature it yields, with the kinds of their values (VersionStats.Keys),
// for the schema drift guard. It reads the top level of each feature's
// properties object only, without allocating for a key it has seen.
type KeysReader struct {
	LayerReader
	keys map[string]uint8
}

// NewKeysReader returns r recording its features' keys.
func NewKeysReader(r LayerReader) *KeysReader {
	return &KeysReader{LayerReader: r, keys: map[string]uint8{}}
}

// Next is the reader's Next, recording the keys of the feature it yields.
func (k *KeysReader) Next() bool {
	if !k.LayerReader.Next() {
		return false
	}
	k.add(k.LayerReader.Feature().Properties)
	return true
}

// Keys returns the keys recorded so far (the map is the reader's).
func (k *KeysReader) Keys() map[string]uint8 { return k.keys }

// add records the top-level keys of obj, a JSON object; what is not one
// is ignored (geomio always gives one).
func (k *KeysReader) add(obj []byte) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return // '}' or malformed
		}
		end, escaped := scanString(obj, i)
		if end < 0 {
			return
		}
		raw := obj[i+1 : end]
		i = skipSpace(obj, end+1)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipSpace(obj, i+1)
		if i >= len(obj) {
			return
		}
		var kind uint8
		switch c := obj[i]; {
		case c == '"':
			kind = KeyString
		case c == 't' || c == 'f':
			kind = KeyBool
		case c == 'n':
			kind = 0
		case c == '{' || c == '[':
			kind = KeyComplex
		default:
			kind = KeyNumber
		}
		if escaped {
			key := string(raw)
			if s, err := strconv.Unquote(`"` + key + `"`); err == nil {
				key = s
			}
			k.keys[key] |= kind
		} else if have, ok := k.keys[string(raw)]; !ok || have|kind != have {
			k.keys[string(raw)] = have | kind
		}
		if i = skipValue(obj, i); i < 0 {
			return
		}
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index of the closing quote of the string that
// opens at b[i], and whether it holds an escape; -1 when unterminated.
func scanString(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}

// skipValue returns the index just past the JSON value at b[i], -1 when
// it is malformed.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		end, _ := scanString(b, i)
		if end < 0 {
			return -1
		}
		return end + 1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := scanString(b, j)
				if end < 0 {
					return -1
				}
				j = end
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		for j := i; j < len(b); j++ {
			if c := b[j]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				return j
			}
		}
		return len(b)
	}
}
