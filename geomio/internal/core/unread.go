package core

// unreadLister is a reader that leaves some layers of its file unread by
// default.
type unreadLister interface{ UnreadLayers() []string }

// UnreadLayers returns the names of the layers with geometry of the file
// r reads that r leaves unread because Options.Layers was not given: a
// GDAL format's point or line layers beside its polygon layers (the job
// reads only the polygon layers; Options.Layers naming them reads them).
// Nil for every other reader. A preflight lists them with what the job
// would do.
func UnreadLayers(r Reader) []string {
	if l, ok := r.(*LimitedReader); ok {
		r = l.Reader
	}
	if u, ok := r.(unreadLister); ok {
		return u.UnreadLayers()
	}
	return nil
}
