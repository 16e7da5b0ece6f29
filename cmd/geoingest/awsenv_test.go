package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"
)

// TestAWSEnvThroughGetenv: the AWS settings come from Main.Getenv, ranked
// as the SDK ranks the same variables: the keys and AWS_REGION over the
// shared config's, the service's endpoint before the global one, none
// when configured endpoints are ignored.
func TestAWSEnvThroughGetenv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf, creds := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	require.NoError(t, os.WriteFile(conf, []byte("[default]\nregion = eu-west-3\n"), 0o600))
	require.NoError(t, os.WriteFile(creds, []byte("[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n"), 0o600))
	base := map[string]string{"AWS_CONFIG_FILE": conf, "AWS_SHARED_CREDENTIALS_FILE": creds, "AWS_EC2_METADATA_DISABLED": "true"}
	load := func(env map[string]string) (string, string) {
		m := &Main{Getenv: func(k string) string { return env[k] }}
		cfg, err := m.loadAWSConfig(context.Background(), awsFlags{maxAttempts: 1, maxBackoff: 1})
		require.NoError(t, err)
		c, err := cfg.Credentials.Retrieve(context.Background())
		require.NoError(t, err)
		return cfg.Region, c.AccessKeyID + ":" + c.SecretAccessKey + ":" + c.SessionToken
	}
	region, key := load(base)
	require.Equal(t, "eu-west-3", region, "the files Getenv names")
	require.Equal(t, "FILEKEY:filesecret:", key)
	region, key = load(with(base, "AWS_REGION", "us-west-2", "AWS_ACCESS_KEY_ID", "ENVKEY", "AWS_SECRET_ACCESS_KEY", "envsecret", "AWS_SESSION_TOKEN", "tok"))
	require.Equal(t, "us-west-2", region)
	require.Equal(t, "ENVKEY:envsecret:tok", key)
	_, key = load(with(base, "AWS_ACCESS_KEY_ID", "ENVKEY"))
	require.Equal(t, "FILEKEY:filesecret:", key, "a key without its secret is not a credential")

	m := &Main{Getenv: func(k string) string {
		return map[string]string{"AWS_ENDPOINT_URL": "http://all", "AWS_ENDPOINT_URL_S3": "http://s3"}[k]
	}}
	require.Equal(t, "http://s3", aws.ToString(m.awsEndpoint("S3")))
	require.Equal(t, "http://all", aws.ToString(m.awsEndpoint("SQS")))
	m.Getenv = func(k string) string {
		return map[string]string{"AWS_ENDPOINT_URL_S3": "http://s3", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}[k]
	}
	require.Nil(t, m.awsEndpoint("S3"))
}
