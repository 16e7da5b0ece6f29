package ingest

import (
	"bytes"
	"strconv"

	"github.com/geoingest/geoingest/geomio"

	"github.com/geoingest/geoingest/geomio/jsonscan"
)

// KeysReader is a LayerReader that records the property keys of every
// feature it yields, with the kinds of their values (VersionStats.Keys),
// for the schema drift guard. It reads the top level of each feature's
// properties object only, without allocating for a key it has seen.
//
// It runs on the goroutine that reads the file, ahead of the prepare
// workers, so it is made cheap for the common case: the features of a
// file list the same keys in the same order. The keys of the feature
// before are kept in order (last); a key found in its place there, with a
// kind already recorded, costs a comparison of its bytes, neither a scan
// for its end nor a map lookup.
type KeysReader struct {
	LayerReader
	index map[string]int // a key's place in slots
	slots []keySlot      // every key recorded, with its kinds
	last  []int          // the slots of the previous feature's keys, in order

	// found is where the current feature's members are, as its scan
	// found them (geomio.Feature.Members), when whole: the scan reached
	// the object's end, and every member was "key":value with no white
	// space. Feature gives them to the feature, so that its mapping
	// (Applier.ApplyMembers) does not scan the object again.
	found []int32
	whole bool
}

// Feature is the reader's feature, with where its properties' members are
// (Members) when its reader did not say and the scan of its keys found
// them.
func (k *KeysReader) Feature() geomio.Feature {
	f := k.LayerReader.Feature()
	if f.Members == nil && k.whole {
		f.Members = k.found
	}
	return f
}

// keySlot is a key and the kinds of its values recorded so far. plain:
// the key was written without escapes (it holds no quote or backslash),
// so that its bytes followed by a quote are the whole key.
type keySlot struct {
	key   string
	kinds uint8
	plain bool
}

// NewKeysReader returns r recording its features' keys.
func NewKeysReader(r LayerReader) *KeysReader {
	return &KeysReader{LayerReader: r, index: map[string]int{}}
}

// Next is the reader's Next, recording the keys of the feature it yields.
func (k *KeysReader) Next() bool {
	if !k.LayerReader.Next() {
		return false
	}
	f := k.LayerReader.Feature()
	k.whole = false
	if len(f.Members) > 0 {
		k.addMembers(f.Properties, f.Members)
	} else {
		k.add(f.Properties)
	}
	return true
}

// addMembers is add of obj whose members are where members says
// (geomio.Feature.Members: "key":value, no white space), read from
// there instead of scanned (TestKeysReaderMembersAsScanned).
func (k *KeysReader) addMembers(obj []byte, members []int32) {
	if len(members)%3 != 0 {
		k.add(obj)
		return
	}
	for pos := 0; 3*pos < len(members); pos++ {
		ks, vs, ve := int(members[3*pos]), int(members[3*pos+1]), int(members[3*pos+2])
		if ks < 0 || ks+3 > vs || ve <= vs || ve > len(obj) || obj[ks] != '"' || obj[vs-2] != '"' || obj[vs-1] != ':' {
			k.add(obj)
			return
		}
		end := vs - 2 // the closing quote
		hit := -1
		if pos < len(k.last) {
			if s := &k.slots[k.last[pos]]; s.plain && ks+1+len(s.key) == end && string(obj[ks+1:end]) == s.key {
				hit = k.last[pos]
			}
		}
		escaped := hit < 0 && bytes.IndexByte(obj[ks+1:end], '\\') >= 0
		kind := valueKind(obj[vs])
		if hit < 0 || k.slots[hit].kinds|kind != k.slots[hit].kinds {
			k.record(pos, obj[ks+1:end], escaped, kind)
		}
	}
}

// valueKind is the kind (VersionStats.Keys) of a JSON value starting
// with c.
func valueKind(c byte) uint8 {
	switch {
	case c == '"':
		return KeyString
	case c == 't' || c == 'f':
		return KeyBool
	case c == 'n':
		return 0
	case c == '{' || c == '[':
		return KeyComplex
	}
	return KeyNumber
}

// Keys returns the keys recorded so far, each with the kinds of its
// values (a new map at each call).
func (k *KeysReader) Keys() map[string]uint8 {
	m := make(map[string]uint8, len(k.slots))
	for _, s := range k.slots {
		m[s.key] = s.kinds
	}
	return m
}

// add records the top-level keys of obj, a JSON object; what is not one
// is ignored (geomio always gives one).
func (k *KeysReader) add(obj []byte) {
	k.found, k.whole = k.found[:0], false
	plain := true // every member so far is "key":value
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for pos := 0; ; pos++ {
		i = jsonscan.SkipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			k.whole = plain && pos == 0 && i < len(obj) && obj[i] == '}'
			return // '}' or malformed
		}
		ks := i
		// The key: the one in this place in the feature before, or scanned.
		hit, end, escaped := -1, -1, false
		if pos < len(k.last) {
			if s := &k.slots[k.last[pos]]; s.plain {
				if e := i + 1 + len(s.key); e < len(obj) && obj[e] == '"' && string(obj[i+1:e]) == s.key {
					hit, end = k.last[pos], e
				}
			}
		}
		if hit < 0 {
			if end, escaped = jsonscan.StringEnd(obj, i); end < 0 {
				return
			}
			end-- // the closing quote
		}
		raw := obj[i+1 : end]
		i = jsonscan.SkipSpace(obj, end+1)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		plain = plain && i == end+1
		vs := jsonscan.SkipSpace(obj, i+1)
		plain = plain && vs == i+1
		if i = vs; i >= len(obj) {
			return
		}
		kind := valueKind(obj[i])
		if hit < 0 || k.slots[hit].kinds|kind != k.slots[hit].kinds {
			k.record(pos, raw, escaped, kind)
		}
		if i = jsonscan.SkipValue(obj, i); i < 0 {
			return
		}
		k.found = append(k.found, int32(ks), int32(vs), int32(i))
		i = jsonscan.SkipSpace(obj, i)
		if i >= len(obj) || obj[i] != ',' {
			k.whole = plain && i < len(obj) && obj[i] == '}'
			return
		}
		i++
	}
}

// record adds kind to the kinds of the key raw (unescaped first when
// escaped), the pos-th key of its feature, and makes it last's pos-th.
func (k *KeysReader) record(pos int, raw []byte, escaped bool, kind uint8) {
	var i int
	var ok bool
	if escaped {
		key := string(raw)
		if s, err := strconv.Unquote(`"` + key + `"`); err == nil {
			key = s
		}
		if i, ok = k.index[key]; !ok {
			i = k.slot(key, false)
		}
	} else if i, ok = k.index[string(raw)]; !ok {
		i = k.slot(string(raw), true)
	}
	k.slots[i].kinds |= kind
	if pos < len(k.last) {
		k.last[pos] = i
	} else {
		k.last = append(k.last, i)
	}
}

// slot adds a slot for key, a key not recorded yet, and returns its place.
func (k *KeysReader) slot(key string, plain bool) int {
	k.slots = append(k.slots, keySlot{key: key, plain: plain})
	k.index[key] = len(k.slots) - 1
	return len(k.slots) - 1
}
