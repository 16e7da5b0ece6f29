package geomio

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// geojsonCRS is the legacy (GeoJSON 2008) "crs" member.
type geojsonCRS struct {
	Type       string `json:"type"`
	Properties struct {
		Name string `json:"name"`
	} `json:"properties"`
}

var (
	reEPSGURN  = regexp.MustCompile(`(?i)^urn:ogc:def:crs:EPSG:[0-9.]*:([0-9]+)$`)
	reEPSGCode = regexp.MustCompile(`(?i)^EPSG:+([0-9]+)$`)
	reEPSGURL  = regexp.MustCompile(`(?i)^https?://www\.opengis\.net/def/crs/EPSG/[0-9.]+/([0-9]+)$`)
	reCRS84    = regexp.MustCompile(`(?i)^(urn:ogc:def:crs:OGC:[0-9.]*:CRS84|https?://www\.opengis\.net/def/crs/OGC/[0-9.]+/CRS84|CRS84|OGC:CRS84)$`)
)

// crsNameToEPSG identifies a GeoJSON crs name ("urn:ogc:def:crs:EPSG::27700",
// "EPSG:3857", "urn:ogc:def:crs:OGC:1.3:CRS84", an opengis.net URL) to an
// EPSG code. It returns 0 when the name is not one of those forms.
func crsNameToEPSG(name string) int {
	name = strings.TrimSpace(name)
	if reCRS84.MatchString(name) {
		return 4326
	}
	for _, re := range []*regexp.Regexp{reEPSGURN, reEPSGCode, reEPSGURL} {
		if m := re.FindStringSubmatch(name); m != nil {
			n, err := strconv.Atoi(m[1])
			if err == nil && n > 0 && n < 1<<31-1 {
				return n
			}
		}
	}
	return 0
}

// resolveGeoJSONCRS returns the EPSG code and text of a legacy crs member.
// A crs that is present but cannot be identified (not by name, not by
// opts.ResolveCRS) gives SRID 0: the caller decides, geomio does not guess.
func resolveGeoJSONCRS(raw json.RawMessage, opts Options) (srid int, text string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, "", nil
	}
	var c geojsonCRS
	if err := json.Unmarshal(raw, &c); err != nil {
		return 0, "", fmt.Errorf("crs member: %w", err)
	}
	text = c.Properties.Name
	if text == "" {
		text = string(raw)
	}
	if !strings.EqualFold(c.Type, "name") || c.Properties.Name == "" {
		srid, err = resolveWith(opts, text)
		return srid, text, err
	}
	if srid = crsNameToEPSG(c.Properties.Name); srid != 0 {
		return srid, text, nil
	}
	srid, err = resolveWith(opts, text)
	return srid, text, err
}

func resolveWith(opts Options, text string) (int, error) {
	if opts.ResolveCRS == nil {
		return 0, nil
	}
	srid, err := opts.ResolveCRS(text)
	if err != nil {
		return 0, fmt.Errorf("resolve crs: %w", err)
	}
	return srid, nil
}
