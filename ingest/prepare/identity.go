package prepare

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/geoingest/geoingest/geomio/jsonscan"
)

// A feature's identity across versions of its source (docs/changes.md,
// "Feature identity") is decided from three values that the prepare
// workers compute for every row, so that the write gate matches two
// versions by comparing stored columns instead of hashing both on the
// server (migration 0032):
//
//   - the geometry hash: of the geometry's EWKB as stored (what ST_AsEWKB
//     returns for it), geoingest_geom_hash(geom) on the server;
//   - the properties hash: of the properties in PostgreSQL's jsonb text
//     form (CanonicalProps), geoingest_props_hash(properties) on the
//     server: attribute order and white space do not count, a duplicated
//     key keeps its last value, a number keeps its scale (1.0 is not 1);
//   - the match key: the source's key fields normalised (MatchKey), as
//     geoingest_key_part and geoingest_key_of compute it on the server.
//
// Each is defined by an SQL expression, so a row whose stored value is
// missing (written before 0032, moved or repaired by the server) is
// computed there and compares equal with one computed here.
//
// Since migration 0044 both hashes are PostgreSQL's own 64-bit
// hash_bytes_extended (HashBytes), where they were MD5 before, some six
// times cheaper: the geometry's as hash_array_extended(ARRAY[EWKB], 0), the
// properties' as hashtextextended(text, 0). They keep the uuid columns of
// 0032, as 8 zero bytes then the hash (big-endian: lpad(to_hex(h), 32,
// '0')::uuid), which is how the server tells a value of this form from an
// MD5 written before 0044 (whose first 8 bytes are all zero only once in
// 2^64), and computes the new form for those rows instead.

// GeomHash is the geometry hash of an EWKB.
func GeomHash(ewkb []byte) [16]byte { return hashUUID(HashBytes(ewkb) + 31) }

// PropsHash is the properties hash of the JSON object props, computed in
// scratch (returned, to be reused); ok is false when props is not JSON
// that PostgreSQL's jsonb accepts (the row is then hashed by the server).
func PropsHash(scratch, props []byte) (sum [16]byte, _ []byte, ok bool) {
	c, err := CanonicalProps(scratch[:0], props)
	if err != nil {
		return sum, c, false
	}
	return CanonicalHash(c), c, true
}

// CanonicalHash is the properties hash of properties' canonical text c
// (CanonicalProps).
func CanonicalHash(c []byte) [16]byte { return hashUUID(HashBytes(c)) }

// hashUUID is a 64-bit hash as the match columns store it: 8 zero bytes,
// then the hash big-endian.
func hashUUID(h uint64) (u [16]byte) {
	binary.BigEndian.PutUint64(u[8:], h)
	return u
}

var errNotJSON = errors.New("not JSON that jsonb takes")

// CanonicalProps appends to dst the text that PostgreSQL prints for the
// JSON value in as jsonb (jsonb_out): object keys unique (the last value
// of a repeated key) and sorted by length then bytes, ", " and ": "
// between members, strings unescaped and escaped again as escape_json
// does, numbers as numeric_out prints them.
func CanonicalProps(dst, in []byte) ([]byte, error) {
	c := canonPool.Get().(*canon)
	defer canonPool.Put(c)
	return c.canonical(dst, in)
}

// CanonicalObject appends to dst the canonical text (CanonicalProps) of
// the JSON object in whose members the caller knows: member m's value is
// in[spans[2*m]:spans[2*m+1]] and its key, written as the canonical text
// writes it (`"key": `), keys[m]; order lists the members in jsonb's key
// order, each key once. It writes the object member by member and gets
// CanonicalProps' bytes without its scan of every key and its sort. An
// error is where CanonicalProps fails on the object too.
func CanonicalObject(dst, in []byte, keys [][]byte, order []int, spans []int32) ([]byte, error) {
	c := canonPool.Get().(*canon)
	defer canonPool.Put(c)
	c.in, c.keys = in, c.keys[:0]
	dst = append(dst, '{')
	for k, m := range order {
		if k > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, keys[m]...)
		// A member's value is at depth 1, as object writes it.
		i, out, err := c.value(dst, int(spans[2*m]), 1)
		if err != nil {
			return out, err
		}
		if i != int(spans[2*m+1]) {
			return out, errNotJSON
		}
		dst = out
	}
	return append(dst, '}'), nil
}

// canonical is CanonicalProps with c.
func (c *canon) canonical(dst, in []byte) ([]byte, error) {
	c.in, c.keys = in, c.keys[:0]
	i, out, err := c.value(dst, jsonscan.SkipSpace(in, 0), 0)
	if err != nil {
		return out, err
	}
	if jsonscan.SkipSpace(in, i) != len(in) {
		return out, errNotJSON
	}
	return out, nil
}

type canon struct {
	in    []byte
	mems  []member
	tmp   []byte
	arena []byte
	keys  []byte // the keys that needed unescaping, unescaped
	idx   []int32
	memo  keyOrder
}

func keyLess(a, b []byte) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return bytes.Compare(a, b) < 0
}

// member is an object's member as object collects it: its key, unescaped
// (canon.in[ks:ke] when plain, the key's own text needing no escaping;
// else canon.keys[ks:ke]), and its value's canonical text (vs:ve in the
// object's buffer of values). It holds no pointer and is small, so that
// sorting the members moves little.
type member struct {
	ks, ke int
	vs, ve int
	plain  bool
}

// key is m's key, unescaped.
func (c *canon) key(m *member) []byte {
	if m.plain {
		return c.in[m.ks:m.ke]
	}
	return c.keys[m.ks:m.ke]
}

var canonPool = sync.Pool{New: func() any { return new(canon) }}

const maxDepth = 64

func (c *canon) value(dst []byte, i, depth int) (int, []byte, error) {
	in := c.in
	if i >= len(in) || depth > maxDepth {
		return i, dst, errNotJSON
	}
	switch in[i] {
	case '{':
		return c.object(dst, i, depth)
	case '[':
		dst = append(dst, '[')
		i = jsonscan.SkipSpace(in, i+1)
		if i < len(in) && in[i] == ']' {
			return i + 1, append(dst, ']'), nil
		}
		for n := 0; ; n++ {
			if n > 0 {
				dst = append(dst, ", "...)
			}
			var err error
			if i, dst, err = c.value(dst, i, depth+1); err != nil {
				return i, dst, err
			}
			i = jsonscan.SkipSpace(in, i)
			if i >= len(in) {
				return i, dst, errNotJSON
			}
			if in[i] == ']' {
				return i + 1, append(dst, ']'), nil
			}
			if in[i] != ',' {
				return i, dst, errNotJSON
			}
			i = jsonscan.SkipSpace(in, i+1)
		}
	case '"':
		j := i + 1
		ascii := true
		for j < len(in) && in[j] != '"' && in[j] != '\\' && in[j] >= 0x20 {
			ascii = ascii && in[j] < utf8.RuneSelf
			j++
		}
		if j < len(in) && in[j] == '"' && (ascii || utf8.Valid(in[i+1:j])) {
			// No escapes: jsonb prints it as written (escape_json
			// escapes only quotes, backslashes and control characters).
			return j + 1, append(dst, in[i:j+1]...), nil
		}
		s, j, err := unquote(c.tmpBuf(), in, i)
		if err != nil {
			return j, dst, err
		}
		c.tmp = s[:0]
		return j, escapeJSON(dst, s), nil
	case 't':
		return literal(dst, in, i, "true")
	case 'f':
		return literal(dst, in, i, "false")
	case 'n':
		return literal(dst, in, i, "null")
	default:
		return numericOut(dst, in, i, false)
	}
}

func (c *canon) tmpBuf() []byte { return c.tmp[:0] }

func literal(dst, in []byte, i int, lit string) (int, []byte, error) {
	if !bytes.HasPrefix(in[i:], []byte(lit)) {
		return i, dst, errNotJSON
	}
	return i + len(lit), append(dst, lit...), nil
}

// object canonicalises the object at in[i]: each member's value is
// written into a buffer of its own, then the members are sorted and
// written out.
func (c *canon) object(dst []byte, i, depth int) (_ int, _ []byte, err error) {
	in := c.in
	base := len(c.mems)
	// The members' values are written apart, then in key order: the top
	// object's into the reused arena, a nested one's into its own buffer.
	var vals []byte
	if depth == 0 {
		vals = c.arena[:0]
	}
	i = jsonscan.SkipSpace(in, i+1)
	if i < len(in) && in[i] == '}' {
		return i + 1, append(dst, "{}"...), nil
	}
	for {
		if i >= len(in) || in[i] != '"' {
			return i, dst, c.dropMembers(base, errNotJSON)
		}
		m := member{ks: i + 1}
		j := i + 1
		for j < len(in) && in[j] != '"' && in[j] != '\\' && in[j] >= 0x20 && in[j] < utf8.RuneSelf {
			j++
		}
		m.plain = j < len(in) && in[j] == '"'
		if m.plain {
			m.ke, j = j, j+1 // plain ASCII: the key is its own text
		} else {
			m.ks = len(c.keys)
			if c.keys, j, err = unquote(c.keys, in, i); err != nil {
				return j, dst, c.dropMembers(base, err)
			}
			m.ke = len(c.keys)
		}
		i = jsonscan.SkipSpace(in, j)
		if i >= len(in) || in[i] != ':' {
			return i, dst, c.dropMembers(base, errNotJSON)
		}
		i = jsonscan.SkipSpace(in, i+1)
		m.vs = len(vals)
		if i, vals, err = c.value(vals, i, depth+1); err != nil {
			return i, dst, c.dropMembers(base, err)
		}
		m.ve = len(vals)
		c.mems = append(c.mems, m)
		i = jsonscan.SkipSpace(in, i)
		if i >= len(in) {
			return i, dst, c.dropMembers(base, errNotJSON)
		}
		if in[i] == '}' {
			i++
			break
		}
		if in[i] != ',' {
			return i, dst, c.dropMembers(base, errNotJSON)
		}
		i = jsonscan.SkipSpace(in, i+1)
	}
	ms := c.mems[base:]
	// jsonb's order: shorter keys first, then by bytes; of equal keys the
	// last one written is kept. The top object's order is remembered: the
	// next feature's object most often has the same keys in the same
	// order, and then takes it at the cost of comparing its keys.
	var order []int32
	if depth == 0 && c.sameKeys(ms) {
		order = c.memo.order
	} else {
		order = c.sortMembers(ms)
		if depth == 0 {
			c.remember(ms, order)
		}
	}
	dst = append(dst, '{')
	for k, o := range order {
		m := &ms[o]
		if k > 0 {
			dst = append(dst, ", "...)
		}
		if m.plain {
			dst = append(append(append(dst, '"'), c.in[m.ks:m.ke]...), '"')
		} else {
			dst = escapeJSON(dst, c.keys[m.ks:m.ke])
		}
		dst = append(dst, ": "...)
		dst = append(dst, vals[m.vs:m.ve]...)
	}
	if depth == 0 {
		c.arena = vals[:0]
	}
	return i, append(dst, '}'), c.dropMembers(base, nil)
}

// keyOrder is the top object's member order as object last worked it
// out: its keys in the order written (keys, ends), and the members to
// write, by index, in jsonb's order (a repeated key's last member only).
type keyOrder struct {
	keys  []byte
	ends  []int32
	order []int32
}

// sameKeys reports whether ms have the keys of the remembered object, in
// the same order.
func (c *canon) sameKeys(ms []member) bool {
	if len(ms) != len(c.memo.ends) || len(ms) == 0 {
		return false
	}
	start := int32(0)
	for k := range ms {
		end := c.memo.ends[k]
		if !bytes.Equal(c.key(&ms[k]), c.memo.keys[start:end]) {
			return false
		}
		start = end
	}
	return true
}

// remember keeps ms's keys and order for sameKeys.
func (c *canon) remember(ms []member, order []int32) {
	c.memo.keys, c.memo.ends = c.memo.keys[:0], c.memo.ends[:0]
	for k := range ms {
		c.memo.keys = append(c.memo.keys, c.key(&ms[k])...)
		c.memo.ends = append(c.memo.ends, int32(len(c.memo.keys)))
	}
	c.memo.order = append(c.memo.order[:0], order...)
}

// sortMembers returns the indices of the members to write, in jsonb's
// order: sorted by key (keyLess), of equal keys the last one written
// only. The slice is c's scratch, valid until the next call.
func (c *canon) sortMembers(ms []member) []int32 {
	idx := c.idx[:0]
	for k := range ms {
		idx = append(idx, int32(k))
	}
	// An insertion sort (stable): objects are small, and most often in
	// order already.
	for a := 1; a < len(idx); a++ {
		ka := c.key(&ms[idx[a]])
		if !keyLess(ka, c.key(&ms[idx[a-1]])) {
			continue
		}
		v := idx[a]
		b := a
		for ; b > 0 && keyLess(ka, c.key(&ms[idx[b-1]])); b-- {
			idx[b] = idx[b-1]
		}
		idx[b] = v
	}
	out := idx[:0]
	for k, o := range idx {
		if k+1 < len(idx) && bytes.Equal(c.key(&ms[idx[k+1]]), c.key(&ms[o])) {
			continue // a later value of the same key wins
		}
		out = append(out, o)
	}
	c.idx = idx
	return out
}

// dropMembers forgets the members collected past base (an object's, once
// written or failed) and returns err.
func (c *canon) dropMembers(base int, err error) error {
	c.mems = c.mems[:base]
	return err
}

// unquote appends the string at in[i] (its opening quote) to dst,
// unescaped, and returns the index after its closing quote. As jsonb: a
// \u0000 or a lone surrogate is refused, as is invalid UTF-8.
func unquote(dst, in []byte, i int) ([]byte, int, error) {
	i++
	for i < len(in) {
		b := in[i]
		switch {
		case b == '"':
			return dst, i + 1, nil
		case b == '\\':
			if i+1 >= len(in) {
				return dst, i, errNotJSON
			}
			e := in[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(in, i)
				if !ok {
					return dst, i, errNotJSON
				}
				i += 4
				if utf16.IsSurrogate(r) {
					if r >= 0xdc00 || i+6 > len(in) || in[i] != '\\' || in[i+1] != 'u' {
						return dst, i, errNotJSON
					}
					r2, ok := hex4(in, i+2)
					if !ok || r2 < 0xdc00 || r2 > 0xdfff {
						return dst, i, errNotJSON
					}
					i += 6
					r = utf16.DecodeRune(r, r2)
				}
				if r == 0 {
					return dst, i, errNotJSON
				}
				dst = utf8.AppendRune(dst, r)
			default:
				return dst, i, errNotJSON
			}
		case b < 0x20:
			return dst, i, errNotJSON
		case b < utf8.RuneSelf:
			dst = append(dst, b)
			i++
		default:
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n <= 1 {
				return dst, i, errNotJSON
			}
			dst = append(dst, in[i:i+n]...)
			i += n
		}
	}
	return dst, i, errNotJSON
}

func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(in[i:i+4]), 16, 32)
	return rune(v), err == nil
}

// escapeJSON appends s as PostgreSQL's escape_json writes it.
func escapeJSON(dst, s []byte) []byte {
	dst = append(dst, '"')
	for _, b := range s {
		switch b {
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		case '"':
			dst = append(dst, `\"`...)
		case '\\':
			dst = append(dst, `\\`...)
		default:
			if b < ' ' {
				const hexd = "0123456789abcdef"
				dst = append(dst, '\\', 'u', '0', '0', hexd[b>>4], hexd[b&15])
			} else {
				dst = append(dst, b)
			}
		}
	}
	return append(dst, '"')
}

// numericOut appends the JSON number at in[i] as numeric_out prints the
// numeric that numeric_in reads from it (its scale: the digits after the
// point less the exponent, at least 0), or, with trim, as
// trim_scale(numeric)::text (no trailing zeros after the point). It
// returns the index after the number.
func numericOut(dst, in []byte, i int, trim bool) (int, []byte, error) {
	j := i
	neg := false
	if j < len(in) && in[j] == '-' {
		neg = true
		j++
	}
	intStart := j
	for j < len(in) && in[j] >= '0' && in[j] <= '9' {
		j++
	}
	intDigits := in[intStart:j]
	if len(intDigits) == 0 || (len(intDigits) > 1 && intDigits[0] == '0') {
		return j, dst, errNotJSON
	}
	var fracDigits []byte
	if j < len(in) && in[j] == '.' {
		j++
		fs := j
		for j < len(in) && in[j] >= '0' && in[j] <= '9' {
			j++
		}
		if j == fs {
			return j, dst, errNotJSON
		}
		fracDigits = in[fs:j]
	}
	exp := 0
	if j < len(in) && (in[j] == 'e' || in[j] == 'E') {
		j++
		es := j
		if j < len(in) && (in[j] == '+' || in[j] == '-') {
			j++
		}
		ds := j
		for j < len(in) && in[j] >= '0' && in[j] <= '9' {
			j++
		}
		if j == ds || j-ds > 6 {
			return j, dst, errNotJSON
		}
		e, err := strconv.Atoi(string(in[es:j]))
		if err != nil {
			return j, dst, errNotJSON
		}
		exp = e
	}
	if exp == 0 && !trim {
		// No exponent: numeric_out prints the literal, less the sign of a
		// zero.
		if neg && len(bytes.Trim(intDigits, "0")) == 0 && len(bytes.Trim(fracDigits, "0")) == 0 {
			i++
		}
		return j, append(dst, in[i:j]...), nil
	}
	// The value is digits * 10^(exp - len(frac)); its scale as numeric_in
	// sets it is len(frac) - exp, at least 0.
	scale := len(fracDigits) - exp
	if scale < 0 {
		scale = 0
	}
	digits := make([]byte, 0, len(intDigits)+len(fracDigits))
	digits = append(digits, intDigits...)
	digits = append(digits, fracDigits...)
	point := len(intDigits) + exp // digits[:point] is the integer part
	var ip, fp []byte
	switch {
	case point <= 0:
		fp = append(bytes.Repeat([]byte{'0'}, -point), digits...)
	case point >= len(digits):
		ip = append(digits, bytes.Repeat([]byte{'0'}, point-len(digits))...)
	default:
		ip, fp = digits[:point], digits[point:]
	}
	for len(ip) > 0 && ip[0] == '0' {
		ip = ip[1:]
	}
	if len(fp) > scale {
		fp = fp[:scale] // only zeros are cut: the scale covers every significant digit
	}
	for len(fp) < scale {
		fp = append(fp, '0')
	}
	if trim {
		for len(fp) > 0 && fp[len(fp)-1] == '0' {
			fp = fp[:len(fp)-1]
		}
	}
	zero := len(bytes.Trim(ip, "0")) == 0 && len(bytes.Trim(fp, "0")) == 0
	if neg && !zero {
		dst = append(dst, '-')
	}
	if len(ip) == 0 {
		dst = append(dst, '0')
	} else {
		dst = append(dst, ip...)
	}
	if len(fp) > 0 {
		dst = append(dst, '.')
		dst = append(dst, fp...)
	}
	return j, dst, nil
}

// MatchKey appends to dst the normalised key of the feature whose
// properties are props, for the key fields fields (a composite key has
// several), as the server's geoingest_key_of(ARRAY[geoingest_key_part(
// properties, field), ...]) gives it (migration 0029): each field's
// value, a JSON string trimmed of surrounding spaces, tabs and line ends
// with its ASCII letters upper-cased, or a JSON number in its shortest
// decimal form (12.50 is 12.5), written as a PostgreSQL text array. ok is
// false when the feature has no key (a field missing, null, empty or of
// another type) or props are not a JSON object.
func MatchKey(dst, props []byte, fields []string) (_ []byte, ok bool) {
	if len(fields) == 0 {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, '{')
	for n, f := range fields {
		v, isStr, found := topMember(props, f)
		if !found {
			return dst[:start], false
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		part, ok := keyPart(v, isStr)
		if !ok {
			return dst[:start], false
		}
		dst = ArrayElement(dst, part)
	}
	return append(dst, '}'), true
}

// KeyPart is one key field's raw JSON value as the key normalises it
// (MatchKey): a string trimmed, its ASCII letters upper-cased; a number in
// its shortest decimal form. ok is false for anything else, or a string
// that is empty once trimmed.
func KeyPart(raw []byte) ([]byte, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	return keyPart(raw, raw[0] == '"')
}

func keyPart(v []byte, isStr bool) ([]byte, bool) {
	if isStr {
		s, _, err := unquote(nil, v, 0)
		if err != nil {
			return nil, false
		}
		s = bytes.Trim(s, " \t\r\n")
		for k, b := range s {
			if b >= 'a' && b <= 'z' {
				s[k] = b - 'a' + 'A'
			}
		}
		return s, len(s) > 0
	}
	if len(v) == 0 || !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return nil, false // null, true, false, an object, an array
	}
	_, p, err := numericOut(nil, v, 0, true)
	if err != nil {
		return nil, false
	}
	return p, len(p) > 0
}

// ArrayElement appends s as array_out writes a text element: quoted (with
// " and \ escaped) when it is NULL in any case, or holds a quote, a
// backslash, a brace, a comma or white space.
func ArrayElement(dst, s []byte) []byte {
	quote := bytes.EqualFold(s, []byte("NULL"))
	for _, b := range s {
		switch b {
		case '"', '\\', '{', '}', ',', ' ', '\t', '\n', '\r', '\v', '\f':
			quote = true
		}
	}
	if !quote {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for _, b := range s {
		if b == '"' || b == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, b)
	}
	return append(dst, '"')
}

// topMember finds the last member named name of the JSON object props (as
// jsonb keeps it) and returns its value's raw text, and whether it is a
// string.
func topMember(props []byte, name string) (val []byte, isStr, found bool) {
	i := jsonscan.SkipSpace(props, 0)
	if i >= len(props) || props[i] != '{' {
		return nil, false, false
	}
	i = jsonscan.SkipSpace(props, i+1)
	var key []byte
	for i < len(props) && props[i] == '"' {
		var j int
		var err error
		key, j, err = unquote(key[:0], props, i)
		if err != nil {
			return nil, false, false
		}
		i = jsonscan.SkipSpace(props, j)
		if i >= len(props) || props[i] != ':' {
			return nil, false, false
		}
		i = jsonscan.SkipSpace(props, i+1)
		if i >= len(props) {
			return nil, false, false
		}
		end := jsonscan.SkipValue(props, i)
		if end <= i { // not closed, or no value
			return nil, false, false
		}
		if string(key) == name {
			val, isStr, found = props[i:end], props[i] == '"', true
		}
		i = jsonscan.SkipSpace(props, end)
		if i < len(props) && props[i] == ',' {
			i = jsonscan.SkipSpace(props, i+1)
		}
	}
	return val, isStr, found
}
