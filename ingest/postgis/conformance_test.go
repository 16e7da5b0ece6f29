package postgis_test

import (
	"context"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/ingesttest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/ingest/postgis"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestStoreConformance runs the Store suite against PostGIS.
func TestStoreConformance(t *testing.T) {
	ingesttest.StoreSuite(t, func(t *testing.T) ingest.Store {
		cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
		require.NoError(t, err)
		cfg.MaxConns = 2*ingesttest.StoreWriters + 2
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		return postgis.NewStore(pool, nil, nil)
	}, localfs.Files{})
}
