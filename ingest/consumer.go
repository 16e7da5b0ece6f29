package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoingest/geoingest/queue"
)

// Consumer turns the messages of a queue into jobs: each event of a
// message is routed (the trigger gate), resolved into a job, run by the
// Service (the claim and write gates), and the message is then acked,
// given back with backoff (a transient failure), given back until a held
// claim's lease has ended, or dead-lettered (a permanent failure). It is
// where a message becomes a job; `geoingest serve` only configures one.
//
// The messages are decoded into events and resolved into jobs by Objects:
// bucket event notifications (ingest/s3), or the inbox's deliveries of
// local files (localfs.Inbox).
type Consumer struct {
	Service  *Service
	Receiver queue.Receiver
	Router   *Router
	// Objects decodes the messages into events and resolves the objects
	// they name.
	Objects ObjectSource
	// PipelineVersion goes into every job's parameters.
	PipelineVersion string
	// Schema is the typed schema whose mappings the routes name
	// (mapping=NAME); nil: none.
	Schema *Schema
	// Workers is how many messages are handled at once (at least 1).
	Workers int
	// MaxReceives is the patience for an incomplete shapefile set: on
	// this receive of its message it is failed and dead-lettered.
	MaxReceives int
	// Visibility, when positive, is the receiver's visibility timeout:
	// a message being handled is kept invisible by renewing it every
	// third of it. 0 for a receiver without one.
	Visibility time.Duration
	// Grace is how long jobs in flight may run after ctx ends before
	// they are cancelled and their messages given back.
	Grace time.Duration
	// BackoffBase is the first retry delay after a transient failure,
	// doubled per receive up to BackoffMax.
	BackoffBase, BackoffMax time.Duration
	// UntilIdle, when positive, stops Run once nothing has been received
	// and no job has run for this long, no message given back for a
	// held claim is due, and the receiver sees none coming
	// (queue.Settler).
	UntilIdle time.Duration
	// Maintainer, when set, runs beside the jobs from Run's start to its
	// end: the report refresh (kicked after each committed job), the
	// compactor (after each written job) and the prune. With its refresh
	// off, each job stores its own assignments before its ack: set
	// Service.NoReportRefresh accordingly.
	Maintainer *Maintainer

	stopping atomic.Bool
	// heldUntil (unix nanos) is when the last message given back for a
	// held claim comes back: UntilIdle waits for it.
	heldUntil atomic.Int64
	// receiveHealth follows failing receives (ReceiveError).
	receiveHealth receiveHealth
	// preclaimed holds claims taken for a received batch (see preclaim):
	// job id -> ClaimResult, taken by runJob.
	preclaimed sync.Map
}

// Stopping reports whether Run is shutting down: true from the moment its
// context is done (or it went idle), while a receive in progress ends and
// jobs in flight finish, so /readyz answers 503 at once.
func (c *Consumer) Stopping() bool { return c.stopping.Load() }

// Run receives and handles messages with at most Workers at once until ctx
// is cancelled (or, with UntilIdle, until idle), then stops receiving,
// lets jobs in flight finish within Grace, cancels the rest (nothing of
// theirs is committed, their claims are released) and gives their
// messages back. It returns after a clean shutdown.
func (c *Consumer) Run(ctx context.Context) {
	c.Maintainer.Start(ctx)
	c.run(ctx)
	c.Maintainer.Stop()
	if c.UntilIdle > 0 && ctx.Err() == nil {
		c.Maintainer.RefreshNow(ctx) // a batch run leaves every assignment stored
	}
}

// noteHeld records that a message given back for a held claim comes back
// after delay.
func (c *Consumer) noteHeld(delay time.Duration) {
	t := time.Now().Add(delay).UnixNano()
	for {
		cur := c.heldUntil.Load()
		if cur >= t || c.heldUntil.CompareAndSwap(cur, t) {
			return
		}
	}
}

// run receives and dispatches messages to at most Workers concurrent
// handlers until ctx is done, then shuts down gracefully.
func (c *Consumer) run(ctx context.Context) {
	log := c.Service.Log
	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	sem := make(chan struct{}, max(c.Workers, 1))
	var wg sync.WaitGroup
	var lastBusy atomic.Int64 // unix nanos of the last receive or job end
	lastBusy.Store(time.Now().UnixNano())
	// A receive in progress is not cut by the shutdown: a long poll whose
	// request is abandoned can still be handed messages by the queue (SQS
	// and fauxqs give them to the closed request), which then stay
	// invisible for their whole visibility timeout, a minute by default,
	// after every stop of a serve. It ends within the driver's wait
	// (queue.Receiver), and what it returns once the shutdown has begun is
	// given back at once; it is cut only if it outlasts Grace (a queue
	// that does not answer).
	recvCtx, cancelRecv := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRecv()
	stopRecvCut := context.AfterFunc(ctx, func() {
		c.stopping.Store(true)
		time.AfterFunc(max(c.Grace, time.Second), cancelRecv)
	})
	defer stopRecvCut()
receive:
	for ctx.Err() == nil {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break receive
		}
		n := 1
	more:
		for n < queue.MaxBatch {
			select {
			case sem <- struct{}{}:
				n++
			default:
				break more
			}
		}
		msgs, err := c.Receiver.Receive(recvCtx, n)
		for i := len(msgs); i < n; i++ {
			<-sem
		}
		if ctx.Err() != nil {
			c.giveBack(msgs)
			for range msgs {
				<-sem
			}
			break
		}
		if len(msgs) > 0 {
			lastBusy.Store(time.Now().UnixNano())
		} else if err == nil && c.UntilIdle > 0 && len(sem) == 0 &&
			time.Since(time.Unix(0, lastBusy.Load())) >= c.UntilIdle &&
			time.Since(time.Unix(0, c.heldUntil.Load())) >= c.UntilIdle && !c.settling() {
			log.Info("idle: stopping", "idle_for", c.UntilIdle.String())
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			c.Service.Metrics.ReceiveFailures.Inc()
			wait, failingFor, logIt := c.receiveHealth.failed(err, time.Now())
			if logIt {
				log.Warn("receive failed; retrying", "error", err.Error(),
					"failing_for", failingFor.Round(time.Second).String(), "retry_in", wait.String())
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
			continue
		}
		if d := c.receiveHealth.succeeded(time.Now()); d > 0 {
			log.Info("receiving again", "failed_for", d.Round(time.Second).String())
		}
		plans := c.preclaim(jobCtx, msgs)
		for i, msg := range msgs {
			var plan *messagePlan
			if plans != nil {
				plan = plans[i]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				defer func() { lastBusy.Store(time.Now().UnixNano()) }()
				c.handle(jobCtx, msg, plan)
			}()
		}
	}

	c.stopping.Store(true)
	log.Info("shutting down: no longer receiving; waiting for jobs in flight", "grace", c.Grace.String())
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(c.Grace):
		log.Warn("grace period over: cancelling jobs in flight; their messages are given back")
		cancelJobs()
		<-done
	}
}

// giveBack makes messages received as the shutdown began visible again
// at once, for another worker.
func (c *Consumer) giveBack(msgs []*queue.Message) {
	if len(msgs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, msg := range msgs {
		if err := c.Receiver.Nack(ctx, msg, 0); err != nil {
			c.Service.Log.Warn("a message received as the shutdown began could not be given back; it comes back after its visibility timeout",
				"message", msg.ID, "error", err.Error())
			continue
		}
		c.Service.Log.Info("message received as the shutdown began: given back", "message", msg.ID)
	}
}

// settling reports whether the receiver sees a message coming that it
// does not deliver yet (queue.Settler): not idle.
func (c *Consumer) settling() bool {
	s, ok := c.Receiver.(queue.Settler)
	return ok && s.Settling()
}

// verdict is what becomes of a message.
type verdict struct {
	retry   bool          // nack with backoff (a transient failure)
	held    time.Duration // a claim is held elsewhere: nack, visible again no sooner than this
	reasons []string      // permanent failures: dead-letter with these
}

// handle processes one message and acks, nacks or dead-letters it.
func (c *Consumer) handle(ctx context.Context, msg *queue.Message, plan *messagePlan) {
	stopExtend := c.keepInvisible(ctx, msg)
	v := c.process(ctx, msg, plan)
	stopExtend()
	log := c.Service.Log.With("message", msg.ID, "receive_count", msg.ReceiveCount)

	// Settle with a context of its own: on shutdown the message must
	// still be given back.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	switch {
	case v.retry || v.held > 0:
		var delay time.Duration
		if v.retry && ctx.Err() == nil { // shutting down: let another worker have it at once
			delay = c.backoff(msg.ReceiveCount)
		}
		// A held claim's job is not done and its worker may be dead: the
		// message comes back when the lease has ended, to take it over.
		delay = max(delay, v.held)
		if v.held > 0 {
			c.noteHeld(delay)
		}
		if err := c.Receiver.Nack(sctx, msg, delay); err != nil {
			log.Warn("nack failed; the message comes back after its visibility timeout", "error", err.Error())
		} else if v.held > 0 && !v.retry {
			log.Info("message given back: its job is in progress elsewhere; it comes back when that lease has ended", "delay", delay.String())
		} else {
			log.Info("message given back for retry", "delay", delay.String())
		}
	case len(v.reasons) > 0:
		reason := strings.Join(v.reasons, "; ")
		err := c.Receiver.DeadLetter(sctx, msg, reason)
		switch {
		case errors.Is(err, queue.ErrNoDeadLetterQueue):
			// The failure is recorded FAILED with its reason; without a
			// DLQ, deleting is all that stops an endless retry.
			log.Error("permanent failure and no dead-letter queue: message deleted; the job is recorded FAILED", "reason", reason)
			if err := c.Receiver.Ack(sctx, msg); err != nil {
				log.Warn("ack failed", "error", err.Error())
			}
		case err != nil:
			log.Error("dead-letter failed; the message comes back", "error", err.Error())
		default:
			c.Service.Metrics.DeadLettered.Inc()
			log.Error("message dead-lettered", "reason", reason)
		}
	default:
		HookAt(sctx, HookBeforeAck, HookWhere{})
		if err := c.Receiver.Ack(sctx, msg); err != nil {
			log.Warn("ack failed; the message comes back and is a duplicate", "error", err.Error())
		}
		HookAt(sctx, HookAfterAck, HookWhere{})
	}
}

// backoff is the nack delay after the n-th receive.
func (c *Consumer) backoff(n int) time.Duration {
	return Backoff{Base: c.BackoffBase, Max: c.BackoffMax}.Delay(n)
}

// keepInvisible renews msg's visibility every third of the visibility
// timeout until the returned func is called.
func (c *Consumer) keepInvisible(ctx context.Context, msg *queue.Message) func() {
	if c.Visibility <= 0 {
		return func() {}
	}
	return renewEvery(ctx, c.Visibility/3, func(ctx context.Context) bool {
		if err := c.Receiver.Extend(ctx, msg, c.Visibility); err != nil {
			if ctx.Err() == nil {
				c.Service.Log.Warn("extend visibility", "message", msg.ID, "error", err.Error())
			}
			return true
		}
		c.Service.Metrics.VisibilityExtensions.Inc()
		return true
	})
}

// final reports whether msg's delivery exhausts the patience for an
// incomplete shapefile set.
func (c *Consumer) final(msg *queue.Message) bool { return msg.ReceiveCount >= c.MaxReceives }

// messagePlan is a message's events as the planner made them (Planner.
// Message), or why its body could not be decoded.
type messagePlan struct {
	items []Planned
	err   error
}

// planner is the consumer's Planner: its routes, its object source, and
// the parameters of its jobs before their route's options.
func (c *Consumer) planner() *Planner {
	base := DefaultParams("")
	base.PipelineVersion = c.PipelineVersion
	base.Schema = c.Schema
	return &Planner{Router: c.Router, Objects: c.Objects, Params: base}
}

// plan decodes msg and passes its events through the trigger gate (no
// I/O beyond decoding): the plan preclaim and process share, so that a
// message is decoded once and each event resolved once.
func (c *Consumer) plan(msg *queue.Message) *messagePlan {
	its, err := c.planner().Message(msg.Body)
	return &messagePlan{items: its, err: err}
}

// process runs every event of msg through the three gates. plan is the
// message's plan when preclaim made it (nil: it is made here).
func (c *Consumer) process(ctx context.Context, msg *queue.Message, plan *messagePlan) verdict {
	m := c.Service.Metrics
	if plan == nil {
		plan = c.plan(msg)
	}
	if plan.err != nil {
		m.EventsReceived.Inc()
		c.Service.Log.Error("unreadable message", "message", msg.ID, "error", plan.err.Error())
		return verdict{reasons: []string{plan.err.Error()}}
	}
	pl := c.planner()
	var v verdict
	for i := range plan.items {
		it := &plan.items[i]
		m.EventsReceived.Inc()
		if !it.Passed() {
			c.filtered(it.Event, it.Filtered)
			continue
		}
		pl.Resolve(ctx, it, c.final(msg))
		c.runJob(ctx, &v, it)
	}
	return v
}

func (c *Consumer) filtered(ev Event, reason string) {
	c.Service.Metrics.EventsFiltered.WithLabelValues(reason).Inc()
	c.Service.Log.Debug("event filtered", "event", ev.String(), "reason", reason)
}

// failed records a failure that happened before a job existed.
func (c *Consumer) failed(ctx context.Context, v *verdict, what string, err error) {
	if KindOf(err) == Transient || ctx.Err() != nil {
		c.Service.Log.Warn("event failed, will retry", "source", what, "error", err.Error())
		v.retry = true
		return
	}
	c.Service.Log.Error("event failed", "source", what, "error", err.Error())
	v.reasons = append(v.reasons, what+": "+err.Error())
}

// RouteParams is the parameters of a job on route: the defaults, the
// pipeline version, and the route's options.
func RouteParams(route Route, pipelineVersion string) Params {
	p := DefaultParams(route.Target)
	p.PipelineVersion = pipelineVersion
	return route.Params(p)
}

// runJob runs the job the planner made (a delete job for a mirrored
// removal) through the claim and write gates, with the claim preclaim
// took for it when there is one; what failed before a job existed is
// failed.
func (c *Consumer) runJob(ctx context.Context, v *verdict, it *Planned) {
	if it.Err != nil {
		c.failed(ctx, v, it.Source, it.Err)
		return
	}
	if !it.Job.Delete {
		if claim, ok := c.takePreclaim(it.Job.ID); ok {
			c.settle(ctx, v, c.Service.runClaimed(ctx, it.Job, claim))
			return
		}
	}
	c.settle(ctx, v, c.Service.Run(ctx, it.Job))
}

// settle folds a job's result into the message's verdict: a duplicate of
// a committed job is success (Run logged it at INFO with the job key); a
// claim held under another worker's live lease is not done, and asks for
// the message back after the lease; a transient failure asks for a retry;
// a permanent one for the dead-letter queue.
func (c *Consumer) settle(ctx context.Context, v *verdict, res Result) {
	switch res.Outcome {
	case Written, Superseded, Retired:
		c.Maintainer.Committed()
	}
	if res.Outcome == Written {
		c.Maintainer.Written()
	}
	if res.Outcome == Held {
		v.held = max(v.held, res.RetryAfter)
		return
	}
	if res.Outcome != Failed {
		return
	}
	if KindOf(res.Err) == Transient || ctx.Err() != nil {
		v.retry = true
		return
	}
	v.reasons = append(v.reasons, fmt.Sprintf("%s (job %s): %v", res.Source, res.JobID, res.Err))
}
