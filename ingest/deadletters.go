package ingest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/geoingest/geoingest/queue"
)

// The operator's actions on failed jobs and dead letters (the console, the
// JSON API and `geoingest deadletters`).
//
// Retrying a failed job is delivering its event again: the Consumer
// dead-letters the message of a permanent failure with a reason that
// names each failed job ("SOURCE (job ID): ERROR", see settle), and a
// retry re-drives the dead letters that name the job to the source queue.
// The re-driven message then goes through the three gates like any
// delivery: the FAILED claim is claimed again (the claim gate allows a
// re-run of a failed job) and the write gate writes the job at most once.
// So a retry keeps exactly once whatever happens around it: a second
// click finds no dead letter left and does nothing; a re-driven message
// delivered twice, or a crash between the re-drive's send and its delete
// (a copy left in both queues, re-driven again), is a duplicate that the
// gates stop. A job whose event was never dead-lettered (no dead-letter
// queue, or a Pub/Sub one, which cannot be read) cannot be retried from
// here: its event must be delivered again at its source.

// DeadLetterInfo is a dead letter and the failed jobs its reason names.
type DeadLetterInfo struct {
	queue.DeadLetter
	JobIDs []string `json:"job_ids,omitempty"`
}

// jobInReason matches how settle names a failed job in a dead letter's
// reason.
var jobInReason = regexp.MustCompile(`\(job ([0-9a-f]{64})\)`)

// DeadLetterJobIDs are the job ids a dead letter's reason names, in order,
// without repeats.
func DeadLetterJobIDs(reason string) []string {
	var ids []string
	for _, m := range jobInReason.FindAllStringSubmatch(reason, -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// ListDeadLetters lists up to max dead letters of box with the jobs each
// names.
func ListDeadLetters(ctx context.Context, box queue.DeadLetterBox, max int) ([]DeadLetterInfo, error) {
	dls, err := box.DeadLetters(ctx, max)
	if err != nil {
		return nil, Transientf("dead letters: %v", err)
	}
	out := make([]DeadLetterInfo, 0, len(dls))
	for _, dl := range dls {
		out = append(out, DeadLetterInfo{DeadLetter: dl, JobIDs: DeadLetterJobIDs(dl.Reason)})
	}
	return out, nil
}

// ErrNotFailed is returned by RetryFailedJob for a job that is not failed
// (in flight, committed, or never claimed).
var ErrNotFailed = errors.New("the job is not failed: nothing to retry")

// ErrNothingToRetry is returned by RetryFailedJob when no dead letter names
// the job: it was re-driven already (a second click), deleted, or never
// dead-lettered.
var ErrNothingToRetry = errors.New("no dead letter names the job: re-driven already, deleted, or never dead-lettered")

// RetryResult is what a retry did: the dead letters it re-drove.
type RetryResult struct {
	JobID    string   `json:"job_id"`
	Redriven []string `json:"redriven"`
}

// RetryFailedJob retries the failed job jobID: it re-drives every dead
// letter (among the first queue.MaxDeadLetters) that names it, and the
// consumer delivers it again through the gates (see the top of this
// file). Errors: ErrNoSuchJob, ErrNotFailed (Precondition), and
// ErrNothingToRetry (Precondition).
func RetryFailedJob(ctx context.Context, jobs ConsoleReader, box queue.DeadLetterBox, jobID string) (RetryResult, error) {
	res := RetryResult{JobID: jobID, Redriven: []string{}}
	rec, err := jobs.ConsoleJob(ctx, jobID)
	if err != nil {
		return res, err
	}
	if rec.Job.State != StateFailed {
		return res, &Error{Kind: Precondition, Err: fmt.Errorf("job %s (%s): %w", jobID, rec.Job.State, ErrNotFailed)}
	}
	dls, err := ListDeadLetters(ctx, box, queue.MaxDeadLetters)
	if err != nil {
		return res, err
	}
	for _, dl := range dls {
		if !slices.Contains(dl.JobIDs, jobID) {
			continue
		}
		switch err := box.RedriveDeadLetter(ctx, dl.ID); {
		case errors.Is(err, queue.ErrNoSuchDeadLetter):
			// Re-driven or deleted by someone else meanwhile.
		case err != nil:
			return res, Transientf("retry %s: %v", jobID, err)
		default:
			res.Redriven = append(res.Redriven, dl.ID)
		}
	}
	if len(res.Redriven) == 0 {
		return res, &Error{Kind: Precondition, Err: fmt.Errorf("job %s: %w", jobID, ErrNothingToRetry)}
	}
	return res, nil
}
