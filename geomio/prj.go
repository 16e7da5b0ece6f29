package geomio

import (
	"regexp"
	"strconv"
	"strings"
)

// identifyPRJ identifies the CRS of a .prj (ESRI or OGC WKT 1, or WKT 2
// with an ID) to an EPSG code, without a CRS database: an EPSG authority
// on the root element wins, then a table of common ESRI and OGC names. It
// returns 0 when it does not know the CRS; it never guesses from
// coordinates or partial matches.
func identifyPRJ(wkt string) int {
	wkt = strings.TrimSpace(wkt)
	if code := rootEPSGAuthority(wkt); code != 0 {
		return code
	}
	m := reRootName.FindStringSubmatch(wkt)
	if m == nil {
		return 0
	}
	kw := strings.ToUpper(m[1])
	switch kw {
	case "GEOGCS", "PROJCS", "GEOGCRS", "PROJCRS", "GEODCRS":
	default:
		return 0 // COMPD_CS, BOUNDCRS, ...: not identified here
	}
	return epsgByName(m[2])
}

var reRootName = regexp.MustCompile(`^([A-Za-z_]+)\s*[\[(]\s*"([^"]*)"`)

// rootEPSGAuthority returns the code of an AUTHORITY["EPSG","n"] or
// ID["EPSG",n] that is a direct child of the root element, or 0.
func rootEPSGAuthority(wkt string) int {
	depth := 0
	inStr := false
	for i := 0; i < len(wkt); i++ {
		c := wkt[i]
		if inStr {
			if c == '"' {
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		default:
			if depth == 1 && (c == 'A' || c == 'a' || c == 'I' || c == 'i') && (i == 0 || wkt[i-1] == ',' || wkt[i-1] == ' ') {
				if m := reAuthority.FindStringSubmatch(wkt[i:]); m != nil {
					if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
						return n
					}
				}
			}
		}
	}
	return 0
}

var reAuthority = regexp.MustCompile(`^(?i:AUTHORITY|ID)\s*[\[(]\s*"EPSG"\s*,\s*"?([0-9]{1,9})"?\s*[\])]`)

var (
	reUTMWGS84 = regexp.MustCompile(`^wgs(?:19)?84utmzone([0-9]{1,2})([ns])$`)
	reUTMNAD83 = regexp.MustCompile(`^nad(?:19)?83utmzone([0-9]{1,2})n$`)
	reUTMNAD27 = regexp.MustCompile(`^nad(?:19)?27utmzone([0-9]{1,2})n$`)
	reUTMETRS  = regexp.MustCompile(`^etrs(?:19)?89utmzone([0-9]{1,2})n$`)
)

// epsgByWKTName maps normalised CRS names (lower case, letters and digits
// only) to EPSG codes.
var epsgByWKTName = map[string]int{
	"gcswgs1984":                        4326,
	"wgs84":                             4326,
	"wgs1984":                           4326,
	"gcsnorthamerican1983":              4269,
	"nad83":                             4269,
	"gcsnorthamerican1927":              4267,
	"nad27":                             4267,
	"gcsetrs1989":                       4258,
	"etrs89":                            4258,
	"gcsosgb1936":                       4277,
	"gcssweref99":                       4619,
	"gcsrgf1993":                        4171,
	"wgs1984webmercatorauxiliarysphere": 3857,
	"wgs1984webmercator":                3857,
	"wgs84pseudomercator":               3857,
	"wgs84worldmercator":                3395,
	"wgs1984worldmercator":              3395,
	"britishnationalgrid":               27700,
	"osgb1936britishnationalgrid":       27700,
	"osgb36britishnationalgrid":         27700,
	"sweref99tm":                        3006,
	"rgf1993lambert93":                  2154,
	"rgf93lambert93":                    2154,
	"etrs1989laeaeurope":                3035,
	"etrs89laea":                        3035,
	"etrs89etrslaea":                    3035,
}

func epsgByName(name string) int {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	n := b.String()
	if code, ok := epsgByWKTName[n]; ok {
		return code
	}
	zone := func(s string) int {
		z, _ := strconv.Atoi(s)
		if z < 1 || z > 60 {
			return 0
		}
		return z
	}
	if m := reUTMWGS84.FindStringSubmatch(n); m != nil && zone(m[1]) != 0 {
		if m[2] == "n" {
			return 32600 + zone(m[1])
		}
		return 32700 + zone(m[1])
	}
	if m := reUTMNAD83.FindStringSubmatch(n); m != nil && zone(m[1]) >= 1 && zone(m[1]) <= 23 {
		return 26900 + zone(m[1])
	}
	if m := reUTMNAD27.FindStringSubmatch(n); m != nil && zone(m[1]) >= 1 && zone(m[1]) <= 22 {
		return 26700 + zone(m[1])
	}
	if m := reUTMETRS.FindStringSubmatch(n); m != nil && zone(m[1]) >= 28 && zone(m[1]) <= 38 {
		return 25800 + zone(m[1])
	}
	return 0
}
