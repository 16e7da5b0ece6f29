package ingest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/ingest"
)

// geomio's errors name no CLI flag; once ingest is in the program (every
// command and serve), the message a user reads names the flag and the
// route option for the error's code.
func TestGeomioErrorsNameTheCLIFlagThroughIngest(t *testing.T) {
	_, err := crs.Resolve("not a CRS at all")
	var ie *crs.InputError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, ingest.CauseCRS, ingest.CauseOf(err))
	require.Contains(t, err.Error(), "give it with --source-srid N (or the route option source-srid=N)")

	require.Equal(t, "with --encoding (or the route option encoding=)", ingest.OptionHint(geomio.CodeEncoding, nil))
	require.Equal(t, "--layer counties --layer 'a b' (or the route option layer=counties|a b)",
		ingest.OptionHint(geomio.CodeLayer, []string{"counties", "a b"}))
	require.Empty(t, ingest.OptionHint("other", nil))
}
