package geoparquet

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// converter appends a non-null value of a leaf column to b as JSON:
// numbers and booleans as JSON values, text as strings, dates and
// timestamps as ISO 8601 strings (as geomio's other readers do), decimals
// as numbers, and other binary data as base64 strings.
type converter func(b []byte, v parquet.Value) []byte

func converterOf(t parquet.Type) converter {
	lt := t.LogicalType()
	ct := t.ConvertedType()
	is := func(c deprecated.ConvertedType) bool { return ct != nil && *ct == c }
	if lt != nil && lt.Value != nil {
		switch l := lt.Value.(type) {
		case *format.StringType, *format.EnumType:
			return appendText
		case *format.JsonType:
			return appendJSON
		case *format.DateType:
			return appendDate
		case *format.TimestampType:
			return timestampConverter(l.Unit.Value)
		case *format.DecimalType:
			if l.Scale < 0 || l.Scale > 76 { // beyond any DECIMAL's precision
				return appendPlain
			}
			return decimalConverter(int(l.Scale))
		case *format.UUIDType:
			return appendUUID
		}
	}
	switch {
	case is(deprecated.UTF8), is(deprecated.Enum):
		return appendText
	case is(deprecated.Json):
		return appendJSON
	case is(deprecated.Date):
		return appendDate
	case is(deprecated.TimestampMillis):
		return timestampConverter(&format.MilliSeconds{})
	case is(deprecated.TimestampMicros):
		return timestampConverter(&format.MicroSeconds{})
	case is(deprecated.Decimal):
		// The scale of a legacy DECIMAL lives in the schema element,
		// which parquet-go does not expose here: the unscaled value.
		return appendPlain
	}
	return appendPlain
}

func appendPlain(b []byte, v parquet.Value) []byte {
	switch v.Kind() {
	case parquet.Boolean:
		return strconv.AppendBool(b, v.Boolean())
	case parquet.Int32:
		return strconv.AppendInt(b, int64(v.Int32()), 10)
	case parquet.Int64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case parquet.Float:
		return appendFloat(b, float64(v.Float()), 32)
	case parquet.Double:
		return appendFloat(b, v.Double(), 64)
	case parquet.Int96:
		// Legacy timestamps (Impala, Spark): nanoseconds of the day and a
		// Julian day.
		i := v.Int96()
		nanos := int64(i[1])<<32 | int64(i[0])
		day := int64(i[2])
		t := time.Unix((day-2440588)*86400, nanos).UTC()
		return appendString(b, t.Format(time.RFC3339Nano))
	default:
		raw := v.ByteArray()
		if utf8.Valid(raw) {
			return appendString(b, string(raw))
		}
		return appendString(b, base64.StdEncoding.EncodeToString(raw))
	}
}

func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

func appendText(b []byte, v parquet.Value) []byte { return appendString(b, string(v.ByteArray())) }

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // invalid UTF-8 becomes U+FFFD
	return append(b, q...)
}

func appendJSON(b []byte, v parquet.Value) []byte {
	raw := v.ByteArray()
	if json.Valid(raw) {
		var c []byte
		if cc, err := compactJSON(raw); err == nil {
			c = cc
		}
		return append(b, c...)
	}
	return appendString(b, string(raw))
}

func compactJSON(raw []byte) ([]byte, error) {
	var v json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func appendDate(b []byte, v parquet.Value) []byte {
	t := time.Unix(int64(v.Int32())*86400, 0).UTC()
	return appendString(b, t.Format("2006-01-02"))
}

func timestampConverter(unit format.TimeUnitValue) converter {
	return func(b []byte, v parquet.Value) []byte {
		n := v.Int64()
		var t time.Time
		switch unit.(type) {
		case *format.MilliSeconds:
			t = time.UnixMilli(n)
		case *format.NanoSeconds:
			t = time.Unix(0, n)
		default:
			t = time.UnixMicro(n)
		}
		return appendString(b, t.UTC().Format(time.RFC3339Nano))
	}
}

func decimalConverter(scale int) converter {
	return func(b []byte, v parquet.Value) []byte {
		var unscaled *big.Int
		switch v.Kind() {
		case parquet.Int32:
			unscaled = big.NewInt(int64(v.Int32()))
		case parquet.Int64:
			unscaled = big.NewInt(v.Int64())
		default:
			// Big-endian two's complement.
			raw := v.ByteArray()
			unscaled = new(big.Int).SetBytes(raw)
			if len(raw) > 0 && raw[0]&0x80 != 0 {
				unscaled.Sub(unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*len(raw))))
			}
		}
		r := new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
		return append(b, r.FloatString(scale)...)
	}
}

func appendUUID(b []byte, v parquet.Value) []byte {
	raw := v.ByteArray()
	if len(raw) != 16 {
		return appendPlain(b, v)
	}
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range raw {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&15])
	}
	return appendString(b, string(out))
}

// typeName is a column's type as inspect shows it: the logical type when
// there is one, else the physical type; "group" for lists, maps and
// structs.
func typeName(n parquet.Node) string {
	if !n.Leaf() {
		return "group"
	}
	t := n.Type()
	if lt := t.LogicalType(); lt != nil && lt.Value != nil {
		return lt.String()
	}
	return t.Kind().String()
}
