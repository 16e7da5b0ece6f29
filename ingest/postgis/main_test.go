package postgis

import (
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/postgistest/hatest"
)

func TestMain(m *testing.M) { pgtest.Main(m, testsrv.Stop, hatest.StopShared) }
