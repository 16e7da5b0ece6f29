package ingest

import (
	"testing"

	"github.com/geoingest/geoingest/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
