package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeRefusesUnparsableEnvironment: an environment value that does not
// parse stops serve with a message naming it, instead of running with the
// default (GEOINGEST_WORKERS=abc used to give 4 workers).
func TestServeRefusesUnparsableEnvironment(t *testing.T) {
	t.Parallel()
	for name, value := range map[string]string{
		"GEOINGEST_WORKERS":    "abc",
		"GEOINGEST_VISIBILITY": "60",
		"GEOINGEST_LEASE":      "five minutes",
	} {
		code, _, errOut := run(t, map[string]string{name: value, "GEOINGEST_INBOX": t.TempDir()}, "serve", "--until-idle", "1s", "--metrics-addr", "")
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, "environment variable "+name+"=")
		require.Contains(t, errOut, value)
	}
}
