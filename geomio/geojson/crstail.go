package geojson

import (
	"bytes"
	"encoding/json"
	"io"
	"os"

	"github.com/geoingest/geoingest/geomio/jsonscan"
)

// A FeatureCollection whose crs member is not before its features array
// may have one after it, and the features cannot be given their SRID
// before it is known. Rather than scanning the whole file for it first,
// the reader reads the members after the features array backwards from
// the end of the file, in a window of crsWindow bytes, where they almost
// always are: a JSON text can be tokenised backwards (a quote preceded by
// an even number of backslashes ends a string). The members found there
// are those that follow the last value too large for the window, which
// is taken to be the features array. Once the features are read, what
// follows the array is scanned forwards exactly as scanTopLevelMember
// would, and if that finds another crs than the one assumed (a crs member
// followed by a member larger than the window), the reader fails rather
// than deliver features with the wrong SRID.

// crsWindow is how much of the end of a file the backward scan reads.
const crsWindow = 1 << 20

// trailingMember returns the raw value of the first member named key in
// the members that follow the last value too large for the window (or
// nil), reading the last window bytes of the file at path. ok is false
// if the end of the file is not the end of a JSON object whose last
// member's value starts before the window (then scan the whole file).
func trailingMember(path, key string, window int) (raw json.RawMessage, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false
	}
	size := fi.Size()
	n := int64(window)
	if size <= n {
		return nil, false
	}
	w := make([]byte, n)
	if _, err := f.ReadAt(w, size-n); err != nil && err != io.EOF {
		return nil, false
	}
	p := skipSpaceBack(w, len(w)-1)
	if p < 0 || w[p] != '}' {
		return nil, false
	}
	p--
	var found json.RawMessage
	for {
		p = skipSpaceBack(w, p)
		if p < 0 {
			return nil, false
		}
		end := p + 1
		start := valueStartBack(w, p)
		switch {
		case start == -2: // the value does not fit: the features array
			return found, true
		case start < 0:
			return nil, false
		}
		val := w[start:end]
		p = skipSpaceBack(w, start-1)
		if p < 0 || w[p] != ':' {
			return nil, false
		}
		p = skipSpaceBack(w, p-1)
		if p < 0 || w[p] != '"' {
			return nil, false
		}
		q := stringStartBack(w, p)
		if q < 0 {
			// The key is cut by the window: as if its value were.
			return found, q == -2
		}
		if string(w[q+1:p]) == key {
			found = val
		}
		p = skipSpaceBack(w, q-1)
		if p < 0 || w[p] != ',' {
			return nil, false // the start of the object in the window
		}
		p--
	}
}

// skipSpaceBack returns the index of the last non-whitespace byte of b at
// or before i, or -1.
func skipSpaceBack(b []byte, i int) int {
	for i >= 0 && jsonscan.IsSpace(b[i]) {
		i--
	}
	return i
}

// stringStartBack returns the index of the opening quote of the string
// whose closing quote is b[i]: the first quote before it that an even
// number of backslashes precedes. It returns -2 if b starts first.
func stringStartBack(b []byte, i int) int {
	for {
		q := bytes.LastIndexByte(b[:i], '"')
		if q < 0 {
			return -2
		}
		n := 0
		for j := q - 1; j >= 0 && b[j] == '\\'; j-- {
			n++
		}
		if q-n == 0 {
			return -2 // the backslashes may go on before the window
		}
		if n%2 == 0 {
			return q
		}
		i = q
	}
}

// valueStartBack returns the index of the first byte of the JSON value
// whose last byte is b[i], -2 if b starts first, or -1 if b[i] cannot end
// a value.
func valueStartBack(b []byte, i int) int {
	switch c := b[i]; {
	case c == '"':
		return stringStartBack(b, i)
	case c == '}' || c == ']':
		depth := 0
		for ; i >= 0; i-- {
			switch b[i] {
			case '"':
				if i = stringStartBack(b, i); i < 0 {
					return i
				}
			case '}', ']':
				depth++
			case '{', '[':
				depth--
				if depth == 0 {
					return i
				}
			}
		}
		return -2
	case jsonscan.IsScalarByte(c):
		for i >= 0 && jsonscan.IsScalarByte(b[i]) {
			i--
		}
		if i < 0 {
			return -2
		}
		return i + 1
	}
	return -1
}
