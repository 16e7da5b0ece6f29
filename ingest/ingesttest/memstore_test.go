package ingesttest_test

import (
	"testing"

	"github.com/geoingest/geoingest/ingest/ingesttest"
	"github.com/geoingest/geoingest/ingest/localfs"
)

// TestMemStoreConformance holds the in-memory store to the claim gate's and
// the write gate's conformance suites, which postgis.Store passes too.
func TestMemStoreConformance(t *testing.T) {
	open := func(t *testing.T) ingesttest.GateStore { return ingesttest.NewMemStore() }
	t.Run("Claims", func(t *testing.T) { ingesttest.ClaimsSuite(t, open, localfs.Files{}) })
	t.Run("WriteGate", func(t *testing.T) { ingesttest.WriteGateSuite(t, open, localfs.Files{}) })
}
