package prepare

import (
	"bytes"
	"crypto/md5"
	"math/bits"
	"testing"
)

// hashBytesRef is hash_bytes_extended(k, len(k), 0) transcribed from
// PostgreSQL's src/common/hashfn.c as its unaligned path reads the key,
// byte by byte and case by case, to check HashBytes's word reads and tail
// against.
func hashBytesRef(k []byte) uint64 {
	rot := bits.RotateLeft32
	a := 0x9e3779b9 + uint32(len(k)) + 3923095
	b, c := a, a
	n := len(k)
	w := func(i int) uint32 { return uint32(k[i]) | uint32(k[i+1])<<8 | uint32(k[i+2])<<16 | uint32(k[i+3])<<24 }
	for n >= 12 {
		a += w(0)
		b += w(4)
		c += w(8)
		a -= c
		a ^= rot(c, 4)
		c += b
		b -= a
		b ^= rot(a, 6)
		a += c
		c -= b
		c ^= rot(b, 8)
		b += a
		a -= c
		a ^= rot(c, 16)
		c += b
		b -= a
		b ^= rot(a, 19)
		a += c
		c -= b
		c ^= rot(b, 4)
		b += a
		k, n = k[12:], n-12
	}
	switch n {
	case 11:
		c += uint32(k[10]) << 24
		fallthrough
	case 10:
		c += uint32(k[9]) << 16
		fallthrough
	case 9:
		c += uint32(k[8]) << 8
		fallthrough
	case 8:
		b += uint32(k[7]) << 24
		fallthrough
	case 7:
		b += uint32(k[6]) << 16
		fallthrough
	case 6:
		b += uint32(k[5]) << 8
		fallthrough
	case 5:
		b += uint32(k[4])
		fallthrough
	case 4:
		a += uint32(k[3]) << 24
		fallthrough
	case 3:
		a += uint32(k[2]) << 16
		fallthrough
	case 2:
		a += uint32(k[1]) << 8
		fallthrough
	case 1:
		a += uint32(k[0])
	}
	c ^= b
	c -= rot(b, 14)
	a ^= c
	a -= rot(c, 11)
	b ^= a
	b -= rot(a, 25)
	c ^= b
	c -= rot(b, 16)
	a ^= c
	a -= rot(c, 4)
	b ^= a
	b -= rot(a, 14)
	c ^= b
	c -= rot(b, 24)
	return uint64(b)<<32 | uint64(c)
}

// TestHashBytesKnownValues: values the server printed
// (SELECT hashtextextended(s, 0)).
func TestHashBytesKnownValues(t *testing.T) {
	for s, want := range map[string]int64{
		"":                           -6939563903564495251,
		"a":                          3591986179850072241,
		"ab":                         2833316173711343549,
		"abcdefghijk":                3112909444737856467,
		"abcdefghijkl":               -7556637188122330412,
		"abcdefghijklmnopqrstuvwxyz": -6612928417832572997,
		`{"a": 1}`:                   -2207530809341272740,
	} {
		if got := int64(HashBytes([]byte(s))); got != want {
			t.Errorf("HashBytes(%q) = %d, want %d", s, got, want)
		}
	}
}

// FuzzMatchHashes: HashBytes is the byte-by-byte transcription of the
// server's; and the properties hash is the hash of their canonical text,
// which is its own canonical text (so the server, which hashes the jsonb
// text it prints, hashes the same bytes).
func FuzzMatchHashes(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"b":1,"a":[1,2,{"y":true,"x":null}]}`, `{"a":1,"a":2}`,
		`{"n":1.50,"m":1e2,"o":-0.00,"s":"a\u00e9\n\"\\\/\u001f\ud83d\ude00"}`, `{"é":"x","z":"y"}`, "0123456789ab\x00\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := HashBytes(in), hashBytesRef(in); got != want {
			t.Fatalf("HashBytes(%x) = %x, the transcription %x", in, got, want)
		}
		c, err := CanonicalProps(nil, in)
		if err != nil {
			return
		}
		h, _, ok := PropsHash(nil, in)
		if !ok || h != hashUUID(HashBytes(c)) {
			t.Fatalf("PropsHash(%s) = %x, %v; want the hash of %s", in, h, ok, c)
		}
		again, err := CanonicalProps(nil, c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("the canonical text %s is not its own (%s, %v)", c, again, err)
		}
	})
}

// BenchmarkMatchHashes measures a parcel's match hashes by part: the
// geometry's (an EWKB of a 7-vertex MultiPolygon) and the properties'
// (their canonical text, then its hash), each as now and as MD5 (before
// migration 0044): go test ./ingest/prepare -run '^$' -bench MatchHashes.
func BenchmarkMatchHashes(b *testing.B) {
	ewkb := make([]byte, 141)
	for i := range ewkb {
		ewkb[i] = byte(i * 7)
	}
	props := []byte(`{"parcel_id":"BE-0000-0000-2","owner":"Mikuláš und Aleksandra Jäger","land_use":"R1","assessed_value":309439.25,"year":1920}`)
	canon, err := CanonicalProps(nil, props)
	if err != nil {
		b.Fatal(err)
	}
	var sink [16]byte
	b.Run("geom", func(b *testing.B) {
		for b.Loop() {
			sink = GeomHash(ewkb)
		}
	})
	b.Run("geom-md5", func(b *testing.B) {
		for b.Loop() {
			sink = md5.Sum(ewkb)
		}
	})
	b.Run("canonical", func(b *testing.B) {
		var scratch []byte
		for b.Loop() {
			scratch, _ = CanonicalProps(scratch[:0], props)
		}
	})
	b.Run("props-hash", func(b *testing.B) {
		for b.Loop() {
			sink = hashUUID(HashBytes(canon))
		}
	})
	b.Run("props-md5", func(b *testing.B) {
		for b.Loop() {
			sink = md5.Sum(canon)
		}
	})
	_ = sink
}
