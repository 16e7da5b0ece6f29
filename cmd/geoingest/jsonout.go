package main

import (
	"encoding/json"
	"io"
)

// jsonEncoder is how the CLI prints JSON: as encoding/json does, but
// without escaping <, > and & for HTML, so that a reason's "10000 -> 10"
// reads as it is and not "10000 -\u003e 10" (nothing the CLI prints is
// embedded in a page; the console escapes what it shows).
func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// writeJSON writes v as indented JSON (jsonEncoder): how every command's
// --format json prints.
func writeJSON(w io.Writer, v any) error {
	enc := jsonEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
