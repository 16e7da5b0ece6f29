package postgis

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// History (migration 0033): the rows a write gate retires are copied into
// feature_history by a trigger, in the gate's transaction, which names
// its job with SetHistoryJob (writegate.go's openGate, pending.go's
// approval); geoingest_features_as_of rebuilds a source's rows at a time
// from its current rows and that history.

var _ ingest.HistoryReader = (*Store)(nil)

func optText(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }

// asOfErr classifies an error of a read as of a time: a time the history
// cannot answer (before the retained versions, or a gap in them: a
// data_exception of geoingest_features_as_of) is permanent, the caller's
// to change, not a failure of the database.
func asOfErr(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "22000" {
		return ingest.Permanentf("as of a time: %s", asOfMessage(pgErr.Message))
	}
	return classify(fmt.Errorf("as of a time: %w", err))
}

// asOfSource is how geoingest_features_as_of names the source of a time
// it cannot answer: "source BUCKET/KEY (PIPELINE_VERSION): ".
var asOfSource = regexp.MustCompile(`^source ([^/]*)/(.*) \(([^()]*)\): `)

// asOfMessage is the function's refusal with its source named as the
// tables name it (file:///PATH for a local file, not file//PATH) and its
// pipeline version said to be one, without the server's ERROR: and
// SQLSTATE around it.
func asOfMessage(msg string) string {
	m := asOfSource.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	src := m[1] + "/" + m[2]
	if m[1] == ingest.LocalBucket {
		src = ingest.Source{Bucket: m[1], Key: m[2]}.String()
	}
	return fmt.Sprintf("source %s (pipeline version %s): %s", src, m[3], msg[len(m[0]):])
}

// FeaturesAsOf returns target's features as they were at time at.
func (s *Store) FeaturesAsOf(ctx context.Context, target string, at time.Time, bucket, key string) ([]ingest.FeatureAsOf, error) {
	rows, err := s.q.FeaturesAsOf(ctx, db.FeaturesAsOfParams{TargetTable: target, At: tstz(at), Bucket: optText(bucket), Key: optText(key)})
	if err != nil {
		return nil, asOfErr(err)
	}
	out := make([]ingest.FeatureAsOf, len(rows))
	for i, r := range rows {
		out[i] = ingest.FeatureAsOf{Bucket: r.SourceBucket, Key: r.SourceKey, Job: r.JobID, FeatureID: r.FeatureID,
			Props: r.Properties, Geometry: r.Geometry, AreaM2: r.AreaM2}
	}
	return out, nil
}

// AreaAsOf returns each source's count and area at time at.
func (s *Store) AreaAsOf(ctx context.Context, target string, at time.Time, bucket, key string) ([]ingest.SourceAsOf, error) {
	rows, err := s.q.AreaAsOf(ctx, db.AreaAsOfParams{TargetTable: target, At: tstz(at), Bucket: optText(bucket), Key: optText(key)})
	if err != nil {
		return nil, asOfErr(err)
	}
	out := make([]ingest.SourceAsOf, len(rows))
	for i, r := range rows {
		out[i] = ingest.SourceAsOf{Bucket: r.SourceBucket, Key: r.SourceKey, Job: r.JobID, Features: r.Features, AreaM2: r.AreaM2}
	}
	return out, nil
}
