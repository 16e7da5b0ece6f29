package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

// Word-at-a-time searches for the splitter and the crs pre-scan, which
// only look for a few bytes in long runs of others (coordinates,
// strings): eight bytes per step instead of one.

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// zeroByte returns x with the high bit set in its lowest zero byte (and
// maybe in bytes above it), or 0 if x has no zero byte.
func zeroByte(x uint64) uint64 { return (x - swarLo) &^ x & swarHi }

// NextStructural returns the index of the first byte of b at or after i
// that is a quote or a bracket, or len(b). It may stop early, at 'Y', '_',
// 'y' or DEL (which share the brackets' bits); the caller looks the byte
// up in structClass.
func NextStructural(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		// '[' ']' '{' '}' (and 'Y' '_' 'y' DEL) are the bytes c with
		// c|0x26 == 0x7F.
		m := zeroByte((w|0x2626262626262626)^0x7F7F7F7F7F7F7F7F) | zeroByte(w^0x2222222222222222)
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && StructClass[b[i]] == 0 {
		i++
	}
	return i
}

// NextQuoteOrBackslash returns the index of the first quote or backslash
// of b at or after i, or len(b).
func NextQuoteOrBackslash(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		m := zeroByte(w^0x2222222222222222) | zeroByte(w^0x5C5C5C5C5C5C5C5C)
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && !QuoteOrBackslash[b[i]] {
		i++
	}
	return i
}

// NextStringSpecial returns the index of the first byte of b at or after
// i that a JSON string may not hold as it is (a quote, a backslash, a
// control character), or len(b). Bytes from 0x80 up are not special.
func NextStringSpecial(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		// A byte below 0x20 borrows in w - 0x20...: its high bit is set
		// after the subtraction and was clear before. The lowest flagged
		// byte of each term is exact (a borrow only moves up).
		m := zeroByte(w^0x2222222222222222) | zeroByte(w^0x5C5C5C5C5C5C5C5C) | ((w - 0x2020202020202020) &^ w & swarHi)
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && !strClass[b[i]] {
		i++
	}
	return i
}
