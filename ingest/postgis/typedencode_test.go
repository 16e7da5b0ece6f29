package postgis

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// numericValues are edge cases of the numeric encoding.
var numericValues = []string{
	"0", "-0", "1", "-1", "12", "123.45", "123.450", "0.5", "-0.5", "0.0001", "0.00001", "10000", "9999.9999",
	"1e3", "1E3", "1e+3", "1e-3", "1.5e1", "-1.5e-1", "1e999", "1e1000", "1e1001", "1e-1000", "1e-1001", "1e-1011",
	"1e0000000000000000000005", "1e99999999999999999999", "1e", "1e+", "1e++5", "1e+-5", "1e--5", "1e5x", "",
	"-", ".5", "1.", "1.2.3", "01", "00.00", "0e5", "-0.0e-0", "x", "1x", "+1", "12345678901234567890.0987654321",
	"0.000000001", "100000000", "1000.0001", "9007199254740993",
}

// sameNumeric checks appendNumeric against the string-built reference.
func sameNumeric(t testing.TB, v string) {
	got := appendNumeric([]byte("x"), []byte(v))
	want := refAppendNumeric([]byte("x"), v)
	if string(got) != string(want) {
		t.Fatalf("numeric %q: %x, reference %x", v, got, want)
	}
}

// TestAppendNumericMatchesReference: the numeric field read in place is
// the one built from strings, byte for byte.
func TestAppendNumericMatchesReference(t *testing.T) {
	for _, v := range numericValues {
		sameNumeric(t, v)
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { appendNumeric(make([]byte, 0, 64), []byte("-12345.678e-2")) }))
}

// FuzzAppendNumeric holds appendNumeric to the reference on any text.
func FuzzAppendNumeric(f *testing.F) {
	for _, v := range numericValues {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) { sameNumeric(t, v) })
}

// refDate is the date field as time.Parse made it.
func refDate(v []byte) []byte {
	be := binary.BigEndian
	tm, err := time.Parse(`"2006-01-02"`, string(v))
	if err != nil {
		return appendBadFields(nil, 1)
	}
	out := be.AppendUint32(nil, 4)
	return be.AppendUint32(out, uint32(int32(floorDiv(tm.Unix()-pgEpoch, 86400))))
}

// TestAppendDateMatchesTimeParse: a date field read in place is the one
// time.Parse made.
func TestAppendDateMatchesTimeParse(t *testing.T) {
	for _, v := range []string{`"2021-03-14"`, `"2000-01-01"`, `"1999-12-31"`, `"0000-01-01"`, `"9999-12-31"`, `"2020-02-29"`,
		`"2021-02-29"`, `"1900-02-29"`, `"2000-02-29"`, `"2021-13-01"`, `"2021-00-10"`, `"2021-01-00"`, `"2021-04-31"`,
		`"2021-4-01"`, `2021-04-01`, `"2021-04-01`, `"2021-04-01x"`, `""`, `"+021-01-01"`, `"1970-01-01"`} {
		require.Equal(t, refDate([]byte(v)), appendTypedValue(nil, ingest.TypeDate, []byte(v)), v)
	}
	// Every day of a few centuries, across the leap rules.
	for d := time.Date(1599, 12, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2101; d = d.AddDate(0, 0, 1) {
		v := []byte(d.Format(`"2006-01-02"`))
		require.Equal(t, refDate(v), appendTypedValue(nil, ingest.TypeDate, v), string(v))
	}
}
