package postgis

import (
	"testing"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testpar"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/postgistest/hatest"
)

func TestMain(m *testing.M) {
	// At -parallel 2 (GOMAXPROCS on a 2-core machine) the two longest
	// tests, TestBackgroundWorkAcrossFailover (which waits on the
	// formation's promotions) and TestCRSMatrix (which waits on ogr2ogr's
	// children), held both slots for two minutes of a cold run while the
	// other tests queued behind them; so four at once.
	testpar.Default(4)
	pgtest.Main(m, testsrv.Stop, hatest.StopShared)
}
