package core

import (
	"math/bits"
	"sync/atomic"
)

// SkipSet is a set of feature indexes that a reader (GeoJSON's streamed
// collections and sequences, shapefiles: the readers that give
// Feature.RawHash) reads past without decoding or yielding them: the
// second pass of a version's raw-bytes prefilter (ingest/postgis), whose
// first pass (Options.RawHashOnly) found those features' bytes equal to
// stored rows'. A skipped feature is still delimited, hashed and checked
// against the limits as it would be otherwise, and keeps its Index: the
// features yielded have the indexes they have in a full read.
//
// It is filled (Add) before the reader it is given to yields anything:
// once a reader has begun (Start), Add is refused, so that no feature is
// read past that was already yielded, or yielded that was meant to be
// skipped. One bit per index: 125 KB per million features.
type SkipSet struct {
	bits  []uint64
	n     int64
	begun atomic.Bool
}

// Add puts index i (>= 0) in the set; false (and nothing added) when the
// reader has begun.
func (s *SkipSet) Add(i int64) bool {
	if s.begun.Load() || i < 0 {
		return false
	}
	w := int(i >> 6)
	if w >= len(s.bits) {
		s.bits = append(s.bits, make([]uint64, w+1-len(s.bits))...)
	}
	if s.bits[w]&(1<<(uint(i)&63)) == 0 {
		s.n++
	}
	s.bits[w] |= 1 << (uint(i) & 63)
	return true
}

// AddAllBut puts in the set every index of all but those in but (a
// prefilter that keeps most of a version lists the few it did not keep,
// rather than every one it kept); false (and nothing added) when the
// reader has begun. all is not changed.
func (s *SkipSet) AddAllBut(all *SkipSet, but []int64) bool {
	if s.begun.Load() {
		return false
	}
	add := append([]uint64(nil), all.bits...)
	for _, i := range but {
		if w := int(i >> 6); i >= 0 && w < len(add) {
			add[w] &^= 1 << (uint(i) & 63)
		}
	}
	if len(s.bits) < len(add) {
		s.bits = append(s.bits, make([]uint64, len(add)-len(s.bits))...)
	}
	s.n = 0
	for w := range s.bits {
		if w < len(add) {
			s.bits[w] |= add[w]
		}
		s.n += int64(bits.OnesCount64(s.bits[w]))
	}
	return true
}

// Start marks the set's reader as begun: readers call it before their
// first feature. Add is refused from then on.
func (s *SkipSet) Start() {
	if s != nil {
		s.begun.Store(true)
	}
}

// Started reports whether the set's reader has begun: the set can no
// longer be filled (the prefilter then reads the version whole).
func (s *SkipSet) Started() bool { return s != nil && s.begun.Load() }

// Has reports whether i is in the set. Safe for the readers' goroutines
// once the set is filled.
func (s *SkipSet) Has(i int64) bool {
	if s == nil || i < 0 {
		return false
	}
	w := int(i >> 6)
	return w < len(s.bits) && s.bits[w]&(1<<(uint(i)&63)) != 0
}

// Len is how many indexes are in the set.
func (s *SkipSet) Len() int64 {
	if s == nil {
		return 0
	}
	return s.n
}
