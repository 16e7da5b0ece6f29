package ingest

import (
	"fmt"
	"net/url"
	"strconv"
)

// Downstream is what a route tells downstream of its sources' changes
// (docs/changes.md, "The webhook"). It is not a job parameter: it changes
// no feature and no change record, so it is not in the job key.
type Downstream struct {
	// Webhook is the URL (http or https) that each change record of the
	// route's sources is POSTed to (route option webhook=URL, the URL
	// percent-encoded when it holds & or ?).
	Webhook string
	// Tiles, when set, makes the webhook's payload list the job's expired
	// tiles in its zoom range (expire-zoom=MIN-MAX, expire-max-tiles=N).
	Tiles *TileZoom
}

// ParseWebhookURL checks a webhook URL: absolute http or https.
func ParseWebhookURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("webhook %q: want an http:// or https:// URL", s)
	}
	return u.String(), nil
}

func (d *Downstream) parseOption(k, v string) (bool, error) {
	switch k {
	case "webhook":
		raw, err := url.QueryUnescape(v)
		if err != nil {
			return true, fmt.Errorf("webhook %q: %v", v, err)
		}
		d.Webhook, err = ParseWebhookURL(raw)
		return true, err
	case "expire-zoom":
		z, err := ParseTileZoom(v, d.tiles())
		if err != nil {
			return true, err
		}
		d.Tiles = &z
	case "expire-max-tiles":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return true, fmt.Errorf("expire-max-tiles %q: want a positive whole number", v)
		}
		z := d.tiles()
		z.MaxTiles = n
		d.Tiles = &z
	default:
		return false, nil
	}
	return true, nil
}

func (d *Downstream) tiles() TileZoom {
	if d.Tiles != nil {
		return *d.Tiles
	}
	return DefaultTileZoom
}

func (d Downstream) options() []string {
	var o []string
	if d.Webhook != "" {
		o = append(o, "webhook="+url.QueryEscape(d.Webhook))
	}
	if d.Tiles != nil {
		o = append(o, "expire-zoom="+d.Tiles.String())
		if d.Tiles.MaxTiles != DefaultTileZoom.MaxTiles {
			o = append(o, "expire-max-tiles="+strconv.FormatInt(d.Tiles.MaxTiles, 10))
		}
	}
	return o
}
