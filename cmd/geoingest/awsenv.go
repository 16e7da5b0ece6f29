package main

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// The AWS SDK reads its environment (AWS_REGION, the keys, the endpoints,
// ...) from the process, whatever Main.Getenv says. awsEnvOptions and
// awsEndpoint pass the variables a deployment or a test sets most through
// m.Getenv as explicit options, at the precedence the SDK gives the same
// variables: with Getenv = os.Getenv (the binary) the configuration is the
// one the SDK alone would make, and an in-process Main with its own
// environment (the tests, side by side) gets that one. What they do not
// name (AWS_PROFILE, AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE, ...) the
// SDK still reads from the process: a profile given as an option would
// rank above a web identity, where the variable ranks below it.

// awsEnvOptions are the LoadOptions of m.Getenv's AWS_REGION,
// AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, AWS_EC2_METADATA_DISABLED
// and static keys. The keys win as the SDK's environment keys do (over a
// web identity, and over the profile AWS_PROFILE names): both
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY set, with AWS_SESSION_TOKEN.
func (m *Main) awsEnvOptions() []func(*config.LoadOptions) error {
	var opts []func(*config.LoadOptions) error
	if r := m.Getenv("AWS_REGION"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	if f := m.Getenv("AWS_CONFIG_FILE"); f != "" {
		opts = append(opts, config.WithSharedConfigFiles([]string{f}))
	}
	if f := m.Getenv("AWS_SHARED_CREDENTIALS_FILE"); f != "" {
		opts = append(opts, config.WithSharedCredentialsFiles([]string{f}))
	}
	if strings.EqualFold(m.Getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	id, secret := m.Getenv("AWS_ACCESS_KEY_ID"), m.Getenv("AWS_SECRET_ACCESS_KEY")
	if id != "" && secret != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(id, secret, m.Getenv("AWS_SESSION_TOKEN"))))
	}
	return opts
}

// awsEndpoint is the endpoint m.Getenv configures for service ("S3",
// "SQS"): AWS_ENDPOINT_URL_<service>, else AWS_ENDPOINT_URL; nil when
// neither is set or AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true (the SDK
// then resolves it, from the shared config or the region).
func (m *Main) awsEndpoint(service string) *string {
	if strings.EqualFold(m.Getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true") {
		return nil
	}
	for _, k := range []string{"AWS_ENDPOINT_URL_" + service, "AWS_ENDPOINT_URL"} {
		if u := m.Getenv(k); u != "" {
			return aws.String(u)
		}
	}
	return nil
}
