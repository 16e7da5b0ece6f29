package postgis

import (
	"testing"

	"github.com/geoingest/geoingest/internal/pgtest"
	"github.com/geoingest/geoingest/internal/testsrv"
	"github.com/geoingest/geoingest/postgistest/hatest"
)

func TestMain(m *testing.M) { pgtest.Main(m, testsrv.Stop, hatest.StopShared) }
