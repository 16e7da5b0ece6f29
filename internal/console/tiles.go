package console

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/geoingest/geoingest/ingest"
)

// GET /api/jobs/{job_id}/tiles[?zoom=MIN-MAX&max_tiles=N&buffer=F]: the
// z/x/y tiles the job expired (docs/changes.md, "Expired tiles"), with
// deepest_zoom and truncated (the cap cut the list: drop the deepest
// zoom's tiles with their descendants).
func (h *Handler) apiJobTiles(w http.ResponseWriter, r *http.Request) {
	cl, ok := h.changes(w, r)
	if !ok {
		return
	}
	te, ok := cl.(ingest.TileExpiry)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "this console lists no expired tiles"})
		return
	}
	z := ingest.DefaultTileZoom
	v := r.URL.Query()
	var err error
	if s := v.Get("zoom"); s != "" {
		if z, err = ingest.ParseTileZoom(s, z); err != nil {
			h.apiError(w, r, err)
			return
		}
	}
	if s := v.Get("max_tiles"); s != "" {
		if z.MaxTiles, err = strconv.ParseInt(s, 10, 64); err != nil || z.MaxTiles < 1 {
			h.apiError(w, r, ingest.Permanentf("max_tiles %q: want a positive whole number", s))
			return
		}
	}
	if s := v.Get("buffer"); s != "" {
		if z.Buffer, err = strconv.ParseFloat(s, 64); err != nil {
			h.apiError(w, r, ingest.Permanentf("buffer %q: want a fraction of a tile", s))
			return
		}
	}
	e, err := te.ExpiredTiles(r.Context(), r.PathValue("job_id"), z)
	if errors.Is(err, ingest.ErrNoChanges) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	}
	if err != nil {
		h.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		ingest.ExpiredTiles
		Truncated bool `json:"truncated"`
	}{e, e.Truncated()})
}
