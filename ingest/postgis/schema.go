package postgis

import (
	"context"
	"fmt"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
)

// ApplySchema creates or extends the typed view of each target of s
// (geoingest_apply_typed_view, migration 0034): columns are only added,
// online; a column changed or removed is refused (Permanent). It returns
// the views' names.
func (s *Store) ApplySchema(ctx context.Context, sc *ingest.Schema) ([]string, error) {
	var views []string
	for _, t := range sc.TargetNames() {
		cols, err := sc.ViewColumns(t)
		if err != nil {
			return views, err
		}
		v, err := s.q.ApplyTypedView(ctx, db.ApplyTypedViewParams{TargetTable: t, Columns: cols})
		if err != nil {
			// A refusal (a data exception: a column removed or retyped)
			// is the file's; anything else (a lock not had in time, a
			// connection lost) may pass on a retry.
			if ingest.KindOf(classify(err)) == ingest.Transient {
				return views, fmt.Errorf("schema %s: apply to %s: %w", sc.File, t, err)
			}
			return views, ingest.Permanentf("schema %s: %v", sc.File, err)
		}
		views = append(views, v)
	}
	return views, nil
}
