package postgis

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// querier is what planOf needs of a pool or a connection.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// planOf returns the plan PostgreSQL makes for sql (EXPLAIN, no costs),
// one line per node, for tests that check what a query is planned to read.
// sql may be an EXECUTE of a statement prepared on q's connection.
func planOf(t *testing.T, q querier, sql string) string {
	t.Helper()
	rows, err := q.Query(context.Background(), "EXPLAIN (COSTS OFF) "+sql)
	require.NoError(t, err)
	var plan []string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "\n")
}
