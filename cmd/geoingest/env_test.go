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
		"GEOINGEST_WORKERS":          "abc",
		"GEOINGEST_VISIBILITY":       "60",
		"GEOINGEST_LEASE":            "five minutes",
		"GEOINGEST_DOWNLOAD_TIMEOUT": "1 minute",
		"GEOINGEST_AWS_MAX_ATTEMPTS": "many",
		"GEOINGEST_AWS_MAX_BACKOFF":  "20",
	} {
		code, _, errOut := run(t, map[string]string{name: value, "GEOINGEST_INBOX": t.TempDir()}, "serve", "--until-idle", "1s", "--metrics-addr", "")
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, "environment variable "+name+"=")
		require.Contains(t, errOut, value)
	}
}

// TestServeRefusesBadRetryPolicy: a retry policy the AWS SDK cannot use
// stops serve at start, naming the flag.
func TestServeRefusesBadRetryPolicy(t *testing.T) {
	t.Parallel()
	for flag, value := range map[string]string{"--aws-max-attempts": "0", "--aws-max-backoff": "0s", "--download-timeout": "-1s"} {
		code, _, errOut := run(t, map[string]string{"GEOINGEST_INBOX": t.TempDir()}, "serve", "--until-idle", "1s", "--metrics-addr", "", flag, value)
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, flag)
	}
}
