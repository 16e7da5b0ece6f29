package main

import (
	"context"
	"os"
	"path"
	"strings"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/queue"
)

// preclaimMaxBytes bounds the objects whose jobs preclaim claims: small
// uploads, where the claim's round trip is much of the job, and whose key
// is cheap to compute again (a local file is hashed to make its key).
const preclaimMaxBytes = 1 << 20

// preclaim takes the claim gate in one statement (ingest.Service.ClaimBatch)
// for the jobs of a received batch of messages whose objects are small and
// not shapefiles (whose key needs their sidecars), and keeps each job's
// outcome for runJob, which then does not claim again: a duplicate of a
// committed job is stopped for the whole batch in one round trip, before
// any download. When it fails, each job claims by itself as usual.
func (s *server) preclaim(ctx context.Context, msgs []*queue.Message) {
	if len(msgs) < 2 {
		return
	}
	var jobs []ingest.Job
	for _, msg := range msgs {
		jobs = append(jobs, s.smallJobs(ctx, msg)...)
	}
	if len(jobs) < 2 {
		return
	}
	res, err := s.svc.ClaimBatch(ctx, jobs)
	if err != nil {
		s.log.Warn("batch claim failed; each job claims by itself", "jobs", len(jobs), "error", err.Error())
		return
	}
	for i, j := range jobs {
		// A job twice in the batch is won once: keep the win, which the
		// first runJob takes; the second then claims by itself (held).
		if prev, ok := s.preclaimed.Load(j.ID); ok && prev.(ingest.ClaimResult) == ingest.ClaimWon {
			continue
		}
		s.preclaimed.Store(j.ID, res[i])
	}
}

// takePreclaim returns (and forgets) the claim preclaim took for jobID.
func (s *server) takePreclaim(jobID string) (ingest.ClaimResult, bool) {
	c, ok := s.preclaimed.LoadAndDelete(jobID)
	if !ok {
		return 0, false
	}
	return c.(ingest.ClaimResult), true
}

// smallJobs returns the jobs of msg that preclaim handles, made exactly as
// process makes them; anything it cannot make is left to process.
func (s *server) smallJobs(ctx context.Context, msg *queue.Message) []ingest.Job {
	small := func(key string, size int64) bool {
		return size > 0 && size <= preclaimMaxBytes && !strings.EqualFold(path.Ext(key), ".shp")
	}
	if s.inbox != "" {
		p, rel := string(msg.Body), msg.Attributes["rel"]
		st, err := os.Stat(p)
		if err != nil || !small(rel, st.Size()) {
			return nil
		}
		ev := ingest.Event{Name: "ObjectCreated:Put", Bucket: ingest.LocalBucket, Key: rel, RawKey: rel, Size: st.Size()}
		route, _, ok := s.router.Route(ev)
		if !ok {
			return nil
		}
		src, f, err := ingest.LocalSource(p)
		if err != nil {
			return nil
		}
		job, err := ingest.NewJob(src, paramsFor(route, s.cfg.pipelineVersion), f)
		if err != nil {
			return nil
		}
		return []ingest.Job{job}
	}
	evs, err := ingest.ParseEvents(msg.Body)
	if err != nil {
		return nil
	}
	var jobs []ingest.Job
	for _, ev := range evs {
		route, _, ok := s.router.Route(ev)
		if !ok || ev.Removed() || !small(ev.Key, ev.Size) {
			continue
		}
		src, f, err := ingest.NewS3Source(ctx, s.s3, ev, ingest.S3Options{FinalAttempt: msg.ReceiveCount >= s.cfg.maxReceives})
		if err != nil {
			continue
		}
		if job, err := ingest.NewJob(src, paramsFor(route, s.cfg.pipelineVersion), f); err == nil {
			jobs = append(jobs, job)
		}
	}
	return jobs
}
