package postgis

import (
	"context"
	"fmt"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestClassify: a data exception PostgreSQL raised (class 22) comes out
// Permanent with its message and chain kept; another server error, and an
// ingest.Error of another kind wrapping a data exception, keep theirs.
func TestClassify(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDB(t))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	serverErr := func(sql string) error {
		var n int
		err := conn.QueryRow(ctx, sql).Scan(&n)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, sql)
		return fmt.Errorf("copy: %w", err)
	}

	data := serverErr("SELECT 'x'::int") // 22P02 invalid_text_representation
	got := classify(data)
	require.Equal(t, ingest.Permanent, ingest.KindOf(got))
	require.Equal(t, data.Error(), got.Error())
	var pgErr *pgconn.PgError
	require.ErrorAs(t, got, &pgErr)
	require.Equal(t, "22P02", pgErr.Code)
	require.Equal(t, ingest.Permanent, ingest.KindOf(classify(serverErr("SELECT 1/0")))) // 22012

	other := serverErr("SELECT no_such_column") // 42703
	require.Same(t, other, classify(other))
	require.Equal(t, ingest.Transient, ingest.KindOf(classify(other)))

	held := &ingest.Error{Kind: ingest.Transient, Err: data}
	require.Equal(t, ingest.Transient, ingest.KindOf(classify(held)))
	require.NoError(t, classify(nil))
}
