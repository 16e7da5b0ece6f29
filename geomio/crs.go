package geomio

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/geoingest/geoingest/geomio/crs"
)

// setLayerCRS resolves text, the CRS a layer's file gives ("" for none),
// into l.SRID and l.CRS, with PROJ (package crs):
//
//   - opts.SourceSRID, when set, wins and the text is not even parsed:
//     the caller knows better than the file (method Override);
//   - no text: SRID 0 (unknown), for the caller to refuse;
//   - an EPSG CRS (named by the file or identified by PROJ): the SRID
//     opts.RegisterCRS gives it, or its code when RegisterCRS is nil;
//   - a custom CRS: the SRID opts.RegisterCRS gives it, or 0 when
//     RegisterCRS is nil.
//
// A CRS that PROJ cannot read or can only transform to WGS 84 with a
// ballpark transformation is an *Error naming file. Failures of PROJ's
// environment or of RegisterCRS are returned as other errors: they are not
// the input's fault.
func setLayerCRS(l *Layer, file, text string, opts Options) error {
	l.CRSText = text
	if opts.SourceSRID != 0 {
		l.SRID = opts.SourceSRID
		l.CRS = crs.CRS{Method: crs.Override, EPSG: opts.SourceSRID, Text: text}
		return nil
	}
	if strings.TrimSpace(strings.TrimPrefix(text, "\uFEFF")) == "" {
		l.SRID, l.CRS = 0, crs.CRS{Text: text}
		return nil
	}
	c, err := crs.Resolve(text)
	if err != nil {
		var ie *crs.InputError
		if errors.As(err, &ie) {
			return &Error{File: file, Problem: "unusable CRS", Err: err}
		}
		return fmt.Errorf("%s: resolve CRS: %w", file, err)
	}
	l.CRS = c
	l.SRID = c.EPSG // 0 for a custom CRS
	if opts.RegisterCRS != nil {
		if l.SRID, err = opts.RegisterCRS(c); err != nil {
			return fmt.Errorf("%s: register CRS %s: %w", file, c, err)
		}
	}
	return nil
}

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

// geojsonCRSText returns the CRS that a crs member names, as text PROJ
// reads ("urn:ogc:def:crs:EPSG::27700", "EPSG:27700", a URL). It is ""
// when there is no crs member.
func geojsonCRSText(raw json.RawMessage) (string, error) {
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
	return "", fmt.Errorf("crs member of type %q names no CRS geoingest can read (it reads the \"name\" and \"EPSG\" forms); give the source SRID (--source-srid, or the route option source-srid=)", c.Type)
}
