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

// preclaim takes the claim gate in one statement (Service.ClaimBatch) for
// the jobs of a received batch of messages whose objects are small and
// not shapefiles (whose key needs their sidecars), and keeps each job's
// outcome for runJob, which then does not claim again: a duplicate of a
// committed job is stopped for the whole batch in one round trip, before
// any download. When it fails, each job claims by itself as usual.
func (c *Consumer) preclaim(ctx context.Context, msgs []*queue.Message) {
	if len(msgs) < 2 {
		return
	}
	var jobs []Job
	for _, msg := range msgs {
		jobs = append(jobs, c.smallJobs(ctx, msg)...)
	}
	if len(jobs) < 2 {
		return
	}
	res, err := c.Service.claimBatch(ctx, jobs)
	if err != nil {
		c.Service.Log.Warn("batch claim failed; each job claims by itself", "jobs", len(jobs), "error", err.Error())
		for _, j := range jobs { // the statement may have taken them, its answer lost
			deadAttempts.note(c.Service.Owner, j.ID, uncertainAttempt)
		}
		return
	}
	for i, j := range jobs {
		// A job twice in the batch is won once: keep the win, which the
		// first runJob takes; the second then claims by itself (held).
		if prev, ok := c.preclaimed.Load(j.ID); ok && prev.(ClaimStatus).Result == ClaimWon {
			continue
		}
		c.preclaimed.Store(j.ID, res[i])
	}
}

// takePreclaim returns (and forgets) the claim preclaim took for jobID.
func (c *Consumer) takePreclaim(jobID string) (ClaimStatus, bool) {
	r, ok := c.preclaimed.LoadAndDelete(jobID)
	if !ok {
		return ClaimStatus{}, false
	}
	return r.(ClaimStatus), true
}

// smallJobs returns the jobs of msg that preclaim handles, made exactly as
// process makes them; anything it cannot make is left to process.
func (c *Consumer) smallJobs(ctx context.Context, msg *queue.Message) []Job {
	small := func(key string, size int64) bool {
		return size > 0 && size <= preclaimMaxBytes && !geomio.IsFileSet(key)
	}
	evs, err := c.Objects.Events(msg.Body)
	if err != nil {
		return nil
	}
	var jobs []Job
	for _, ev := range evs {
		route, _, ok := c.Router.Route(ev)
		if !ok || ev.Removed() || !small(ev.Key, ev.Size) {
			continue
		}
		src, f, err := c.Objects.Resolve(ctx, ev, c.final(msg))
		if err != nil {
			continue
		}
		if job, err := NewJob(src, c.params(route), f); err == nil {
			jobs = append(jobs, job)
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
