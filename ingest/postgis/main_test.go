package postgis

import (
	"testing"

	"github.com/geoingest/geoingest/internal/pgtest"
	"github.com/geoingest/geoingest/internal/testsrv"
)

func TestMain(m *testing.M) { pgtest.Main(m, testsrv.Stop) }
