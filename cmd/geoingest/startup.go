package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/geoingest/geoingest/ingest"
	ingests3 "github.com/geoingest/geoingest/ingest/s3"
	sqsqueue "github.com/geoingest/geoingest/queue/sqs"
)

// startCheck is one thing serve makes sure of before it takes work. run
// returns nil when all is well, a note to log when it cannot tell, an
// error wrapped by fatal when retrying cannot help (the configuration is
// wrong), and any other error when no answer came (retried until the
// start-up timeout).
type startCheck struct {
	what string
	run  func(ctx context.Context) (note string, err error)
}

// fatalError is a start-up failure that retrying cannot mend.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }
func (e fatalError) Unwrap() error { return e.err }

func fatal(err error) error { return fatalError{err} }

// startCheckRetry is the wait between two attempts of a start-up check.
var startCheckRetry = ingest.Backoff{Base: time.Second, Max: 5 * time.Second}

// runStartChecks runs the checks in order. A fatal failure stops at once;
// any other is retried (1 s, doubled, at most 5 s apart; each attempt at
// most 10 s) until timeout has passed since the first check began, and then
// stops with the last error. It returns nil when every check passed.
func runStartChecks(ctx context.Context, log *slog.Logger, timeout time.Duration, checks []startCheck) error {
	deadline := time.Now().Add(timeout)
	for _, c := range checks {
		for attempt := 1; ; attempt++ {
			actx, cancel := context.WithTimeout(ctx, min(10*time.Second, max(time.Until(deadline), time.Second)))
			note, err := c.run(actx)
			cancel()
			if err == nil {
				if note != "" {
					log.Warn("start-up check: cannot tell; going on", "check", c.what, "note", note)
				} else {
					log.Debug("start-up check passed", "check", c.what)
				}
				break
			}
			var fe fatalError
			if errors.As(err, &fe) {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if time.Until(deadline) <= 0 {
				return fmt.Errorf("%s: no answer within the start-up timeout of %s (--start-timeout, env GEOINGEST_START_TIMEOUT), after %d attempts: %w",
					c.what, timeout, attempt, err)
			}
			wait := startCheckRetry.Delay(attempt)
			log.Warn("start-up check failed; retrying", "check", c.what, "attempt", attempt, "error", err.Error(),
				"retry_in", wait.String())
			select {
			case <-time.After(min(wait, max(time.Until(deadline), 0))):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// credentialsHelp says how to give AWS credentials.
const credentialsHelp = "give them with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), " +
	"or AWS_PROFILE naming a profile of ~/.aws/config or ~/.aws/credentials, or run with an instance, task or web-identity role " +
	"(AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE)"

// awsStartChecks are the checks of serve on a queue: a region and
// credentials, the queue and the dead-letter queue answering
// GetQueueAttributes, and the bucket of each route that names one.
func awsStartChecks(awsCfg aws.Config, sqsClient *sqs.Client, s3Client *s3.Client, queueURL, dlqURL string, routes []ingest.Route) []startCheck {
	checks := []startCheck{{what: "AWS credentials", run: func(ctx context.Context) (string, error) {
		if awsCfg.Region == "" {
			return "", fatal(errors.New("no AWS region: set AWS_REGION (or the region of the profile AWS_PROFILE names)"))
		}
		if awsCfg.Credentials == nil {
			return "", fatal(errors.New("no AWS credentials: " + credentialsHelp))
		}
		if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
			return "", fatal(fmt.Errorf("no AWS credentials: %s; the SDK said: %w", credentialsHelp, err))
		}
		return "", nil
	}}}
	queueCheck := func(flag, env, url string) startCheck {
		return startCheck{what: flag + " " + url, run: func(ctx context.Context) (string, error) {
			err := sqsqueue.CheckQueue(ctx, sqsClient, url)
			switch {
			case err == nil:
				return "", nil
			case errors.Is(err, sqsqueue.ErrNoSuchQueue):
				return "", fatal(fmt.Errorf("%s %s: the queue does not exist: check %s (env %s), AWS_REGION and AWS_ENDPOINT_URL_SQS: %w",
					flag, url, flag, env, answer(err)))
			case errors.Is(err, sqsqueue.ErrBadCredentials):
				return "", fatal(fmt.Errorf("%s %s: the AWS credentials were refused: check them (%s): %w", flag, url, credentialsHelp, answer(err)))
			case errors.Is(err, sqsqueue.ErrAccessDenied):
				return "not allowed sqs:GetQueueAttributes on the queue, so whether it exists is known at the first receive " +
					"(grant it for this check and the console's dead-letter depth): " + err.Error(), nil
			case errors.Is(err, sqsqueue.ErrRefused):
				return "", fatal(fmt.Errorf("%s %s: refused: check %s (env %s): %w", flag, url, flag, env, answer(err)))
			}
			return "", err
		}}
	}
	checks = append(checks, queueCheck("--queue-url", "GEOINGEST_QUEUE_URL", queueURL))
	if dlqURL != "" {
		checks = append(checks, queueCheck("--dlq-url", "GEOINGEST_DLQ_URL", dlqURL))
	}
	seen := map[[2]string]bool{}
	for _, r := range routes {
		if r.Bucket == "" || seen[[2]string{r.Bucket, r.Prefix}] {
			continue // a route for every bucket names none to check
		}
		seen[[2]string{r.Bucket, r.Prefix}] = true
		bucket, prefix := r.Bucket, r.Prefix
		checks = append(checks, startCheck{what: "bucket " + bucket + " of route " + r.String(), run: func(ctx context.Context) (string, error) {
			res, err := ingests3.CheckBucket(ctx, s3Client, bucket, prefix)
			switch {
			case errors.Is(err, ingests3.ErrNoSuchBucket):
				return "", fatal(fmt.Errorf("bucket %s (route %s): the bucket does not exist: check --route (env GEOINGEST_ROUTES) and AWS_ENDPOINT_URL_S3: %w",
					bucket, r.String(), answer(err)))
			case errors.Is(err, ingests3.ErrBadCredentials):
				return "", fatal(fmt.Errorf("bucket %s: the AWS credentials were refused: check them (%s): %w", bucket, credentialsHelp, answer(err)))
			case errors.Is(err, ingests3.ErrRefused):
				return "", fatal(fmt.Errorf("bucket %s (route %s): refused (a bucket of another region than AWS_REGION?): %w", bucket, r.String(), answer(err)))
			case err != nil:
				return "", err
			case res == ingests3.BucketUnknowable:
				return "HeadBucket is forbidden (it needs s3:ListBucket) and so is reading a missing key: credentials allowed only s3:GetObject get these answers; the first download tells whether the objects can be read", nil
			}
			return "", nil
		}})
	}
	return checks
}

// answer is the server's answer inside a check's refusal, which the
// message has already said the meaning of.
func answer(err error) error {
	var qe *sqsqueue.CheckError
	if errors.As(err, &qe) {
		return qe.Err
	}
	var be *ingests3.CheckError
	if errors.As(err, &be) {
		return be.Err
	}
	return err
}

// checkWorkDir makes sure jobs can write in dir (--work-dir): it creates
// it when missing and writes and removes a file in it.
func checkWorkDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--work-dir %s (env GEOINGEST_WORK_DIR): %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".geoingest-start-up-check-")
	if err == nil {
		err = f.Close()
		os.Remove(f.Name())
	}
	if err != nil {
		return fmt.Errorf("--work-dir %s (env GEOINGEST_WORK_DIR): not writable: %w", dir, err)
	}
	return nil
}
