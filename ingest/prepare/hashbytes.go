package prepare

import (
	"encoding/binary"
	"math/bits"
)

// HashBytes is PostgreSQL's hash_bytes_extended(k, len, 0)
// (src/common/hashfn.c: Bob Jenkins' lookup3, 64-bit result b<<32|c) as a
// little-endian server computes it, bit for bit: what SQL's
// hashtextextended(t COLLATE "C", 0) gives for a text of those bytes, and,
// plus 31, hash_array_extended(ARRAY[b::bytea], 0) (the array hash of a
// one-element array is 31 + its element's hash). The match columns are
// built on it (identity.go); TestMatchHashesAgreeWithTheServer checks it
// against the server on random inputs of every length class.
//
// It is not a cryptographic hash: a source's own publisher could craft two
// texts with one hash (docs/changes.md, "Feature identity", says what that
// could do and why it is acceptable).
func HashBytes(k []byte) uint64 {
	a := 0x9e3779b9 + uint32(len(k)) + 3923095
	b, c := a, a
	for len(k) >= 12 {
		a += binary.LittleEndian.Uint32(k)
		b += binary.LittleEndian.Uint32(k[4:])
		c += binary.LittleEndian.Uint32(k[8:])
		// mix(a, b, c)
		a -= c
		a ^= bits.RotateLeft32(c, 4)
		c += b
		b -= a
		b ^= bits.RotateLeft32(a, 6)
		a += c
		c -= b
		c ^= bits.RotateLeft32(b, 8)
		b += a
		a -= c
		a ^= bits.RotateLeft32(c, 16)
		c += b
		b -= a
		b ^= bits.RotateLeft32(a, 19)
		a += c
		c -= b
		c ^= bits.RotateLeft32(b, 4)
		b += a
		k = k[12:]
	}
	// The last 0-11 bytes: a takes bytes 0-3, b 4-7, c 8-10 above its
	// lowest byte (little-endian), the rest zero.
	var t [12]byte
	copy(t[:], k)
	a += binary.LittleEndian.Uint32(t[0:])
	b += binary.LittleEndian.Uint32(t[4:])
	c += binary.LittleEndian.Uint32(t[8:]) << 8
	// final(a, b, c)
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return uint64(b)<<32 | uint64(c)
}
