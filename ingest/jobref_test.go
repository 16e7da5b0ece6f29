package ingest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// prefixIDs is a JobIDPrefixes over a list of ids that counts its reads.
type prefixIDs struct {
	ids   []string
	reads int
}

func (p *prefixIDs) JobIDsWithPrefix(_ context.Context, prefix string, limit int) ([]string, error) {
	p.reads++
	var out []string
	for _, id := range p.ids {
		if strings.HasPrefix(id, prefix) && len(out) < limit {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

func TestResolveJobID(t *testing.T) {
	ctx := context.Background()
	a := "0123456789ab" + strings.Repeat("0", 52)
	b := "0123456789ab" + strings.Repeat("1", 52)
	c := "fedcba987654" + strings.Repeat("2", 52)
	p := &prefixIDs{ids: []string{a, b, c}}

	for in, want := range map[string]string{
		c:                c, // a full id
		c[:8]:            c, // the shortest prefix
		c[:12]:           c, // as the tables print it
		a[:13]:           a,
		b[:13]:           b,
		"0123456789abcd": "0123456789abcd", // unknown: as it is, for the caller's "no such job"
		"ffff":           "ffff",           // too short: as it is
		"no-such-job":    "no-such-job",    // not hex: as it is, unread
		"FEDCBA98":       "FEDCBA98",       // upper case is no job id
	} {
		got, err := ResolveJobID(ctx, p, in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	reads := p.reads
	_, err := ResolveJobID(ctx, p, c)
	require.NoError(t, err)
	require.Equal(t, reads, p.reads, "a full id is not looked up")

	// Shorter than 8: taken as a whole id, unread, even where it starts one.
	reads = p.reads
	got, err := ResolveJobID(ctx, p, c[:7])
	require.NoError(t, err)
	require.Equal(t, c[:7], got)
	require.Equal(t, reads, p.reads)
	require.True(t, TooShortJobPrefix(c[:7]))
	require.False(t, TooShortJobPrefix(c[:8]))
	require.False(t, TooShortJobPrefix("job-1"))
	require.False(t, TooShortJobPrefix(""))

	_, err = ResolveJobID(ctx, p, a[:12])
	var amb *AmbiguousJobError
	require.True(t, errors.As(err, &amb), "%v", err)
	require.ErrorIs(t, err, ErrAmbiguousJob)
	require.Equal(t, []string{a, b}, amb.Matches)
	require.False(t, amb.More)
	require.Equal(t, "job id prefix 0123456789ab is ambiguous: it starts "+a+", "+b+" (give more of the id)", err.Error())

	// At most a few are listed.
	var many []string
	for i := range 8 {
		many = append(many, "abcdef01"+strings.Repeat(string("01234567"[i]), 56))
	}
	_, err = ResolveJobID(ctx, &prefixIDs{ids: many}, "abcdef01")
	require.True(t, errors.As(err, &amb), "%v", err)
	require.Equal(t, many[:5], amb.Matches)
	require.True(t, amb.More)
	require.True(t, strings.HasSuffix(err.Error(), ", ... (give more of the id)"), err.Error())
}
