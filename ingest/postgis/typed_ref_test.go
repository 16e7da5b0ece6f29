package postgis

// appendNumeric as it was before it read the bytes without allocating:
// the reference of TestAppendNumericMatchesReference and
// FuzzAppendNumeric.

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/geoingest/geoingest/ingest"
)

func refAppendNumeric(out []byte, s string) []byte {
	be := binary.BigEndian
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 10*ingest.NumericLimit || e < -10*ingest.NumericLimit {
			return appendBadFields(out, 1)
		}
		s, exp = s[:i], e
	}
	intPart, frac := s, ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		intPart, frac = s[:i], s[i+1:]
	}
	if intPart == "" || !allDigitsOrEmpty(intPart) || !allDigitsOrEmpty(frac) {
		return appendBadFields(out, 1)
	}
	dscale := len(frac) - exp
	if dscale < 0 {
		dscale = 0
	}
	// The digits, and the point's place among them.
	digits := intPart + frac
	point := len(intPart) + exp
	if point < 0 {
		digits = strings.Repeat("0", -point) + digits
		point = 0
	}
	if point > len(digits) {
		digits += strings.Repeat("0", point-len(digits))
	}
	if point > ingest.NumericLimit+1 || len(digits)-point > ingest.NumericLimit+10 {
		return appendBadFields(out, 1)
	}
	// Pad to whole groups of 4 on both sides of the point.
	lead := (4 - point%4) % 4
	digits = strings.Repeat("0", lead) + digits
	point += lead
	if r := (len(digits) - point) % 4; r != 0 {
		digits += strings.Repeat("0", 4-r)
	}
	weight := point/4 - 1
	groups := make([]uint16, 0, len(digits)/4)
	for i := 0; i < len(digits); i += 4 {
		g := uint16(digits[i]-'0')*1000 + uint16(digits[i+1]-'0')*100 + uint16(digits[i+2]-'0')*10 + uint16(digits[i+3]-'0')
		groups = append(groups, g)
	}
	for len(groups) > 0 && groups[0] == 0 {
		groups = groups[1:]
		weight--
	}
	for len(groups) > 0 && groups[len(groups)-1] == 0 {
		groups = groups[:len(groups)-1]
	}
	sign := uint16(0)
	if neg && len(groups) > 0 {
		sign = 0x4000
	}
	if len(groups) == 0 {
		weight = 0
	}
	out = be.AppendUint32(out, uint32(8+2*len(groups)))
	out = be.AppendUint16(out, uint16(len(groups)))
	out = be.AppendUint16(out, uint16(int16(weight)))
	out = be.AppendUint16(out, sign)
	out = be.AppendUint16(out, uint16(dscale))
	for _, g := range groups {
		out = be.AppendUint16(out, g)
	}
	return out
}
