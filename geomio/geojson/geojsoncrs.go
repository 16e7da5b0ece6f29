package geojson

import (
	"github.com/geoingest/geoingest/geomio/internal/hint"

	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// geojsonCRS is the legacy (GeoJSON 2008) "crs" member, in its named form
// {"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::27700"}} and
// its older EPSG form {"type":"EPSG","properties":{"code":27700}}.
type geojsonCRS struct {
	Type       string `json:"type"`
	Properties struct {
		Name string          `json:"name"`
		Code json.RawMessage `json:"code"`
	} `json:"properties"`
}

// GeojsonCRSText returns the CRS that a crs member names, as text PROJ
// reads ("urn:ogc:def:crs:EPSG::27700", "EPSG:27700", a URL). It is ""
// when there is no crs member.
func GeojsonCRSText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var c geojsonCRS
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", fmt.Errorf("crs member: %w", err)
	}
	switch {
	case strings.EqualFold(c.Type, "name") && strings.TrimSpace(c.Properties.Name) != "":
		return c.Properties.Name, nil
	case strings.EqualFold(c.Type, "EPSG") && len(c.Properties.Code) > 0:
		code := strings.Trim(string(c.Properties.Code), `"`)
		if n, err := strconv.Atoi(code); err == nil && n > 0 {
			return "EPSG:" + strconv.Itoa(n), nil
		}
		return "", fmt.Errorf("crs member: EPSG code %s is not a positive number", c.Properties.Code)
	}
	return "", fmt.Errorf("crs member of type %q names no CRS geoingest can read (it reads the \"name\" and \"EPSG\" forms); give its CRS %s", c.Type, hint.Give(hint.CRS))
}
