package ingest

import (
	"context"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/queue"
)

// preclaimMaxBytes bounds the objects whose jobs preclaim claims: small
// uploads, where the claim's round trip is much of the job, and whose key
// is cheap to compute again (a local file is hashed to make its key).
const preclaimMaxBytes = 1 << 20

// preclaim plans each of a received batch of messages (Consumer.plan),
// resolves the events whose objects are small and not file sets (whose
// key needs their other parts), and takes the claim gate for their jobs in
// one statement (Service.ClaimBatch), keeping each job's outcome for
// runJob, which then does not claim again: a duplicate of a committed job
// is stopped for the whole batch in one round trip, before any download.
// It returns the plans, which process goes on with (nil for a batch of
// one: process plans it). When the claim fails, each job claims by
// itself as usual.
func (c *Consumer) preclaim(ctx context.Context, msgs []*queue.Message) []*messagePlan {
	if len(msgs) < 2 {
		return nil
	}
	plans := make([]*messagePlan, len(msgs))
	var jobs []Job
	for i, msg := range msgs {
		plans[i] = c.plan(msg)
		jobs = append(jobs, c.smallJobs(ctx, msg, plans[i])...)
	}
	if len(jobs) < 2 {
		return plans
	}
	res, err := c.Service.claimBatch(ctx, jobs)
	if err != nil {
		c.Service.Log.Warn("batch claim failed; each job claims by itself", "jobs", len(jobs), "error", err.Error())
		for _, j := range jobs { // the statement may have taken them, its answer lost
			deadAttempts.note(c.Service.Owner, j.ID, uncertainAttempt)
		}
		return plans
	}
	for i, j := range jobs {
		// A job twice in the batch is won once: keep the win, which the
		// first runJob takes; the second then claims by itself (held).
		if prev, ok := c.preclaimed.Load(j.ID); ok && prev.(ClaimStatus).Result == ClaimWon {
			continue
		}
		c.preclaimed.Store(j.ID, res[i])
	}
	return plans
}

// takePreclaim returns (and forgets) the claim preclaim took for jobID.
func (c *Consumer) takePreclaim(jobID string) (ClaimStatus, bool) {
	r, ok := c.preclaimed.LoadAndDelete(jobID)
	if !ok {
		return ClaimStatus{}, false
	}
	return r.(ClaimStatus), true
}

// smallJobs resolves, in plan, the events that preclaim handles (created,
// routed, small, not a file set) and returns their jobs; an event it
// cannot make a job of keeps its failure for process.
func (c *Consumer) smallJobs(ctx context.Context, msg *queue.Message, plan *messagePlan) []Job {
	small := func(key string, size int64) bool {
		return size > 0 && size <= preclaimMaxBytes && !geomio.IsFileSet(key)
	}
	pl := c.planner()
	var jobs []Job
	for i := range plan.items {
		it := &plan.items[i]
		if !it.Passed() || it.Event.Removed() || !small(it.Event.Key, it.Event.Size) {
			continue
		}
		pl.Resolve(ctx, it, c.final(msg))
		if it.Err == nil {
			jobs = append(jobs, it.Job)
		}
	}
	return jobs
}

// ClaimBatch is Store.ClaimBatch for this service's owner and lease.
func (s *Service) ClaimBatch(ctx context.Context, jobs []Job) ([]ClaimResult, error) {
	return s.Store.ClaimBatch(ctx, jobs, s.Owner, s.Lease)
}

// claimBatch is ClaimBatch with the won claims' attempt numbers when the
// Store tells them (Reclaimer).
func (s *Service) claimBatch(ctx context.Context, jobs []Job) ([]ClaimStatus, error) {
	if r, ok := s.Store.(Reclaimer); ok {
		return r.ClaimBatchAttempts(ctx, jobs, s.Owner, s.Lease)
	}
	res, err := s.Store.ClaimBatch(ctx, jobs, s.Owner, s.Lease)
	out := make([]ClaimStatus, len(res))
	for i, r := range res {
		out[i] = ClaimStatus{Result: r}
	}
	return out, err
}
