package core

import (
	"errors"
	"fmt"
	"strings"

	"github.com/geoingest/geoingest/geomio/crs"
)

// SetLayerCRS resolves text, the CRS a layer's file gives ("" for none),
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
func SetLayerCRS(l *Layer, file, text string, opts Options) error {
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
	c, err := opts.resolved.resolve(text)
	if err != nil {
		var ie *crs.InputError
		if errors.As(err, &ie) {
			e := &Error{File: file, Problem: "unusable CRS", Err: err, Code: CodeCRS}
			if opts.Preflight {
				l.SRID, l.CRS, l.CRSError = 0, crs.CRS{Text: text}, e
				return nil
			}
			return e
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

// CRSCache keeps each CRS text's resolution (crs.Resolve: PROJ's parse,
// identification and transformation checks, some 50-150 ms for a WKT)
// for the layers of one upload: a File Geodatabase's or GeoPackage's
// layers, a zip's shapefiles, mostly share one CRS, and were each
// resolved again. It lives for one Open (and the preflight's second pass
// over the same file), never longer: a grid installed meanwhile is seen
// by the next upload. Safe for one goroutine at a time, as a Reader is.
type CRSCache struct {
	m map[string]resolvedCRS
}

type resolvedCRS struct {
	c   crs.CRS
	err error
}

// resolve is crs.Resolve(text), once per text; a nil cache keeps nothing.
func (c *CRSCache) resolve(text string) (crs.CRS, error) {
	if c == nil {
		return crs.Resolve(text)
	}
	if r, ok := c.m[text]; ok {
		return r.c, r.err
	}
	r, err := crs.Resolve(text)
	var ie *crs.InputError
	if err == nil || errors.As(err, &ie) {
		// The file's answer, not PROJ's environment failing (which a
		// later layer may not meet).
		if c.m == nil {
			c.m = map[string]resolvedCRS{}
		}
		c.m[text] = resolvedCRS{r, err}
	}
	return r, err
}

// WithCRSCache is opts with a cache of resolved CRSs of its own, unless
// it has one: Open gives every read one, shared by its layers.
func WithCRSCache(opts Options) Options {
	if opts.resolved == nil {
		opts.resolved = &CRSCache{}
	}
	return opts
}
