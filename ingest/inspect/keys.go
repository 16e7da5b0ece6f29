package inspect

import (
	"hash/fnv"
	"sort"

	"github.com/geoingest/geoingest/ingest/prepare"
)

// Candidate keys (docs/changes.md, "Feature identity"): the fields whose
// values are present, non-empty and unique in every feature of a layer,
// normalised as the key is (a string trimmed and upper-cased, a number
// without trailing zeros), which `--key` or a route's key= could name;
// "@id" when every GeoJSON Feature has a unique id member. Values are
// kept as 64-bit hashes, so memory grows with the features while a field
// is still a candidate; after MaxKeyFeatures features the layer's
// candidates are those of its first MaxKeyFeatures (CandidateKeysOf says
// how many were looked at).

// MaxKeyFeatures is how many features of a layer the candidate keys are
// looked for in.
const MaxKeyFeatures = 1 << 20

type keyCand struct {
	seen map[uint64]struct{}
	last int64 // the feature that last had a value
	dead bool
}

type keyTracker struct {
	n     int64 // features observed
	cands map[string]*keyCand
	order []string
}

// begin starts feature n (0-based); it reports whether it is observed.
func (k *keyTracker) begin() bool {
	if k.n >= MaxKeyFeatures {
		return false
	}
	if k.cands == nil {
		k.cands = map[string]*keyCand{}
	}
	return true
}

// observe records field's raw JSON value in the current feature.
func (k *keyTracker) observe(field string, raw []byte) {
	c, ok := k.cands[field]
	if !ok {
		c = &keyCand{seen: map[uint64]struct{}{}, last: -1}
		if k.n > 0 {
			c.dead = true // absent from an earlier feature
		}
		k.cands[field] = c
		k.order = append(k.order, field)
	}
	if c.dead {
		return
	}
	v, ok := normalisedKey(raw)
	if !ok {
		k.kill(c)
		return
	}
	h := fnv.New64a()
	h.Write(v)
	sum := h.Sum64()
	if _, dup := c.seen[sum]; dup {
		k.kill(c)
		return
	}
	c.seen[sum] = struct{}{}
	c.last = k.n
}

func (k *keyTracker) kill(c *keyCand) { c.dead, c.seen = true, nil }

// end ends the current feature: a candidate it had no value for dies.
func (k *keyTracker) end() {
	for _, c := range k.cands {
		if !c.dead && c.last != k.n {
			k.kill(c)
		}
	}
	k.n++
}

// keys are the candidates left, in the order the fields first appeared.
func (k *keyTracker) keys() []string {
	out := []string{}
	if k.n == 0 {
		return out
	}
	for _, f := range k.order {
		if c := k.cands[f]; !c.dead {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i] == "@id" && out[j] != "@id" })
	return out
}

// normalisedKey is a key value as the key normalises it (prepare.KeyPart,
// the workers' and the server's rule): the string "12" and the number 12
// are one value there, so one here; false for anything else or an empty
// string.
func normalisedKey(raw []byte) ([]byte, bool) {
	return prepare.KeyPart(raw)
}

// KeyCheck is what the job's key (--key, a route's key=: Params.Key)
// finds in a layer, as the feature matching reads it (prepare.MatchKey:
// normalised, "12" and 12 one value): the features that have a key, those
// that have none (a key field missing, null or empty), and those whose
// key value another feature of the layer shares, which the key matches
// with nothing (a version's duplicate_keys). FieldsMissing are the key
// fields that no feature of the layer has: none of its features then has
// a key (a typo, or @id in a format without ids).
type KeyCheck struct {
	Fields        []string `json:"fields"`
	Keyed         int64    `json:"keyed"`
	Unkeyed       int64    `json:"unkeyed"`
	Duplicates    int64    `json:"duplicates"`
	FieldsMissing []string `json:"fields_missing,omitempty"`
}

// keyCheck accumulates a layer's KeyCheck. Key values are kept as 64-bit
// hashes.
type keyCheck struct {
	fields []string
	counts map[uint64]int32
	keyed  int64
	none   int64
	buf    []byte
}

func newKeyCheck(fields []string) *keyCheck {
	return &keyCheck{fields: fields, counts: map[uint64]int32{}}
}

// add adds a feature whose properties are props (with the property "@id"
// when the key names it: ingest.WithFeatureID).
func (k *keyCheck) add(props []byte) {
	var ok bool
	k.buf, ok = prepare.MatchKey(k.buf[:0], props, k.fields)
	if !ok {
		k.none++
		return
	}
	k.keyed++
	h := fnv.New64a()
	h.Write(k.buf)
	k.counts[h.Sum64()]++
}

// result is the layer's KeyCheck; has reports whether a feature of the
// layer had a field.
func (k *keyCheck) result(has func(field string) bool) *KeyCheck {
	r := &KeyCheck{Fields: k.fields, Keyed: k.keyed, Unkeyed: k.none}
	for _, n := range k.counts {
		if n > 1 {
			r.Duplicates += int64(n)
		}
	}
	for _, f := range k.fields {
		if !has(f) {
			r.FieldsMissing = append(r.FieldsMissing, f)
		}
	}
	return r
}
