package core

import "slices"

// What a preflight (inspect) needs to describe every layer of a file, as
// GDAL lists them, beyond the features a job reads: the layers the job
// reads (empty ones too), the layers it leaves unread, the tables without
// geometry, and the error Options.Preflight deferred. A MultiReader
// answers for the layers it has opened, and for the streams among them (a
// zip's GDAL dataset): all of them once Next has returned false.

// ReadLayers are the layers m reads, in order, empty ones too.
func (m *MultiReader) ReadLayers() []Layer {
	var out []Layer
	for _, r := range m.opened {
		if sub, ok := r.(*MultiReader); ok {
			out = append(out, sub.ReadLayers()...)
		} else {
			out = append(out, r.Layer())
		}
	}
	return out
}

// UnreadLayers are Layers.Unread, its streams' included.
func (m *MultiReader) UnreadLayers() []string {
	out := slices.Clip(m.Unread)
	for _, r := range m.opened {
		if sub, ok := r.(*MultiReader); ok {
			out = append(out, sub.UnreadLayers()...)
		}
	}
	return out
}

// UnreadTables are Layers.Tables, its streams' included.
func (m *MultiReader) UnreadTables() []string {
	out := slices.Clip(m.Tables)
	for _, r := range m.opened {
		if sub, ok := r.(*MultiReader); ok {
			out = append(out, sub.UnreadTables()...)
		}
	}
	return out
}

// OpenRefusal is Layers.Refusal, else its first stream's.
func (m *MultiReader) OpenRefusal() error {
	if m.Refusal != nil {
		return m.Refusal
	}
	for _, r := range m.opened {
		if sub, ok := r.(*MultiReader); ok && sub.OpenRefusal() != nil {
			return sub.OpenRefusal()
		}
	}
	return nil
}

func multiOf(r Reader) (*MultiReader, bool) {
	if l, ok := r.(*LimitedReader); ok {
		r = l.Reader
	}
	m, ok := r.(*MultiReader)
	return m, ok
}

// ReadLayers returns the layers r reads, in reading order, as far as
// they are known (each complete once Next has returned false): a GDAL
// dataset's every planned layer, empty ones too; r.Layer() for a reader
// of one layer.
func ReadLayers(r Reader) []Layer {
	if m, ok := multiOf(r); ok {
		return m.ReadLayers()
	}
	return []Layer{r.Layer()}
}

// UnreadLayers returns the names of the layers with geometry of the file
// r reads that r leaves unread because Options.Layers was not given: a
// GDAL format's point or line layers beside its polygon layers (the job
// reads only the polygon layers; Options.Layers naming them reads them).
// Nil for every other reader. A preflight lists them with what the job
// would do.
func UnreadLayers(r Reader) []string {
	if m, ok := multiOf(r); ok {
		return m.UnreadLayers()
	}
	return nil
}

// UnreadTables returns the names of the layers without geometry (a
// GeoPackage's or File Geodatabase's attribute tables, a CSV without a
// geometry column) of the file r reads, which a job never reads: listed
// only when r was opened with Options.Preflight, and read when
// Options.Layers names them. Nil for every other reader.
func UnreadTables(r Reader) []string {
	if m, ok := multiOf(r); ok {
		return m.UnreadTables()
	}
	return nil
}

// Refusal returns the error with which Open would have refused the whole
// file but for Options.Preflight, which opened it to describe its layers
// (a GDAL dataset with tables only: "no layer with geometry"); nil when
// there is none.
func Refusal(r Reader) error {
	if m, ok := multiOf(r); ok {
		return m.OpenRefusal()
	}
	return nil
}
