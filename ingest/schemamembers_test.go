package ingest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// membersObject writes a JSON object of keys and values as a DBF record
// is rendered ("key":value, no white space) and where its members are
// (geomio.Feature.Members).
func membersObject(keys, vals []string) (obj []byte, members []int32) {
	obj = append(obj, '{')
	for i, k := range keys {
		if i > 0 {
			obj = append(obj, ',')
		}
		ks := len(obj)
		obj = append(obj, k...)
		obj = append(obj, ':')
		vs := len(obj)
		obj = append(obj, vals[i]...)
		members = append(members, int32(ks), int32(vs), int32(len(obj)))
	}
	return append(obj, '}'), members
}

// randomMembers is an object of some of the 20-column mapping's fields,
// escaped keys, repeated keys and unmapped ones, with values of every
// kind (some that do not cast).
func randomMembers(r *rand.Rand) ([]string, []string) {
	names := []string{`"F0"`, `"F1"`, `"F2"`, `"F3"`, `"F4"`, `"F5"`, `"F\u0031"`, `"EXTRA"`, `"a\"b"`, `""`, `"F7"`, `"F19"`}
	vals := []string{`"0012345"`, `9007199254740993`, `"123.45"`, `"Y"`, `"2021-03-14"`, `null`, `""`, `"x"`, `1.5`, `true`, `[1,{"a":2}]`, `{"b":null}`, `"\u00e9"`}
	var keys, vs []string
	for range r.IntN(15) {
		keys = append(keys, names[r.IntN(len(names))])
		vs = append(vs, vals[r.IntN(len(vals))])
	}
	return keys, vs
}

// TestApplyMembersAsApply: reading the members where they are gives
// Apply's record, spans and error, with one Applier across records (its
// memory of the keys in their places), and with a key that is not where
// the members say (read by scanning, as Apply).
func TestApplyMembersAsApply(t *testing.T) {
	m := schema20(t).Mapping("m")
	scan, read := m.Applier(), m.Applier()
	r := rand.New(rand.NewPCG(1, 2))
	recs := 0
	for i := range 20000 {
		obj, members := membersObject(randomMembers(r))
		if i%97 == 0 && len(members) > 0 {
			members[3*r.IntN(len(members)/3)] += int32(2*r.IntN(2) - 1) // a key not where it says: scanned instead
		}
		want, werr := scan.Apply(nil, obj)
		got, gerr := read.ApplyMembers(nil, obj, members)
		require.Equal(t, fmt.Sprint(werr), fmt.Sprint(gerr), "%s", obj)
		require.Equal(t, string(want), string(got), "%s", obj)
		require.Equal(t, scan.Spans(), read.Spans(), "%s", obj)
		if werr == nil {
			recs++
		}
	}
	require.Greater(t, recs, 2000)
}

// TestKeysReaderMembersAsScanned: the keys and kinds recorded from the
// members where they are are the ones scanned for.
func TestKeysReaderMembersAsScanned(t *testing.T) {
	scan, read := NewKeysReader(nil), NewKeysReader(nil)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		obj, members := membersObject(randomMembers(r))
		if i%89 == 0 && len(members) > 0 {
			members[3*r.IntN(len(members)/3)] += int32(2*r.IntN(2) - 1)
		}
		scan.add(obj)
		read.addMembers(obj, members)
		require.Equal(t, scan.Keys(), read.Keys(), "%s", obj)
	}
	require.NotEmpty(t, scan.Keys())
}

// TestKeysReaderFindsMembers: the scan of a feature's keys finds where
// its members are, as a reader that writes them says it (Members), and
// gives them only when every member is "key":value with no white space.
func TestKeysReaderFindsMembers(t *testing.T) {
	k := NewKeysReader(nil)
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		keys, vals := randomMembers(r)
		obj, members := membersObject(keys, vals)
		k.add(obj)
		require.True(t, k.whole, "%s", obj)
		require.Equal(t, fmt.Sprint(members), fmt.Sprint(k.found), "%s", obj)
		if len(keys) > 0 {
			spaced := append([]string(nil), vals...)
			spaced[r.IntN(len(spaced))] = " " + spaced[0]
			obj, _ = membersObject(keys, spaced)
			k.add(obj)
			require.False(t, k.whole, "%s", obj)
		}
	}
}
