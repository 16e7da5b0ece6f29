package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
)

// awsFlags are the download timeout and the retry policy of the AWS SDK
// clients (S3 and SQS).
type awsFlags struct {
	// downloadTimeout is how long a download may receive nothing before
	// it is abandoned as a transient failure (ingests3.Options.IdleTimeout).
	downloadTimeout time.Duration
	// maxAttempts is how many times the SDK sends one request (the first
	// attempt included) on a retryable error: a 5xx, a throttle, a reset.
	maxAttempts int
	// maxBackoff caps the SDK's delay between two attempts.
	maxBackoff time.Duration
}

func (m *Main) addAWSFlags(fs *flag.FlagSet, a *awsFlags) {
	fs.DurationVar(&a.downloadTimeout, "download-timeout", m.envDuration("GEOINGEST_DOWNLOAD_TIMEOUT", time.Minute), "abandon a download (a transient failure, retried) when nothing was received for this long: not a bound on the whole download; 0: none (env GEOINGEST_DOWNLOAD_TIMEOUT)")
	fs.IntVar(&a.maxAttempts, "aws-max-attempts", m.envInt("GEOINGEST_AWS_MAX_ATTEMPTS", 5), "attempts of one S3 or SQS request on a retryable error (5xx, throttling, a reset), the first included (env GEOINGEST_AWS_MAX_ATTEMPTS)")
	fs.DurationVar(&a.maxBackoff, "aws-max-backoff", m.envDuration("GEOINGEST_AWS_MAX_BACKOFF", 20*time.Second), "longest delay between two attempts of an S3 or SQS request (jittered exponential backoff) (env GEOINGEST_AWS_MAX_BACKOFF)")
}

// validate refuses values the SDK cannot use.
func (a awsFlags) validate() error {
	switch {
	case a.maxAttempts < 1:
		return fmt.Errorf("--aws-max-attempts must be at least 1")
	case a.maxBackoff <= 0:
		return fmt.Errorf("--aws-max-backoff must be positive")
	case a.downloadTimeout < 0:
		return fmt.Errorf("--download-timeout must not be negative")
	}
	return nil
}

// loadAWSConfig is config.LoadDefaultConfig with the retry policy of a and
// the AWS environment read through m.Getenv (awsEnvOptions).
func (m *Main) loadAWSConfig(ctx context.Context, a awsFlags) (aws.Config, error) {
	if err := a.validate(); err != nil {
		return aws.Config{}, err
	}
	return config.LoadDefaultConfig(ctx, append(m.awsEnvOptions(), config.WithRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = a.maxAttempts
			o.MaxBackoff = a.maxBackoff
		})
	}))...)
}
