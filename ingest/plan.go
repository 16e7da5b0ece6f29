package ingest

import (
	"context"
	"path/filepath"
)

// Planner is the one place where a queue message, a bucket event or a
// local path becomes a job: the trigger gate (Router), the resolution of
// the object version the event names (ObjectSource, FileSource), and the
// job's parameters, key and guards. The consumer and its batch claim,
// backfill, and the ingest, inspect and replay commands all make their
// jobs here, so that one upload makes one job key whichever path it
// takes.
//
// Planning is two steps, so that a caller can route cheaply and resolve
// (which may read the object store or hash a file) later, once:
// Message and Event pass events through the trigger gate with no I/O;
// Resolve makes the job of one planned event. PlanMessage, PlanEvent and
// PlanPath do both.
type Planner struct {
	// Router is the trigger gate. Nil: every event passes, and its job
	// has Params as they are (the ingest and replay commands).
	Router *Router
	// Objects decodes queue messages and resolves the events of an
	// object store; Files resolves local paths (Planned.Path).
	Objects ObjectSource
	Files   FileSource
	// Params are the jobs' parameters before their route's options.
	Params Params
	// Guards are the jobs' guards over their route's (Guards.Over).
	Guards Guards
	// Current, when set, makes each job replace its source's current
	// generation as it is when the job is made (Params.Replaces: a
	// backfill's replace-if-match); nil leaves Replaces as Params has it.
	Current CurrentGenerations
}

// CurrentGenerations is what a planner that replaces only a generation it
// has seen reads of the ledger (Ledger.CurrentGeneration).
type CurrentGenerations interface {
	// CurrentGeneration returns the job id of the current generation of
	// the source (bucket, key) in target under pipelineVersion, "" when
	// there is none.
	CurrentGeneration(ctx context.Context, bucket, key, target, pipelineVersion string) (string, error)
}

// Planned is one event on its way to a job.
type Planned struct {
	Event Event
	// Path is the local file the event is about ("" for an object
	// store's): it is resolved by Planner.Files.
	Path string
	// Route is the route the event follows when Routed.
	Route  Route
	Routed bool
	// Filtered is the reason the trigger gate dropped the event (one of
	// the Filter constants), "" when it passed. A dropped event is never
	// a failure.
	Filtered string
	// Job is the job, once Resolve made it (Resolved and Err nil).
	Job Job
	// Err is why Resolve could make no job; Source then names what failed
	// (the source when it was known, else the event).
	Err      error
	Source   string
	Resolved bool
}

// Passed reports whether the event passed the trigger gate.
func (it *Planned) Passed() bool { return it.Filtered == "" }

// Message decodes a queue message into its events (Objects.Events) and
// passes each through the trigger gate. It does no I/O beyond decoding;
// an undecodable body is the error (Permanent).
func (p *Planner) Message(body []byte) ([]Planned, error) {
	evs, err := p.Objects.Events(body)
	if err != nil {
		return nil, err
	}
	out := make([]Planned, len(evs))
	for i, ev := range evs {
		out[i] = p.Event(ev, "")
	}
	return out, nil
}

// Event passes ev, about the local file path when path is not "", through
// the trigger gate.
func (p *Planner) Event(ev Event, path string) Planned {
	it := Planned{Event: ev, Path: path}
	if p.Router == nil {
		return it
	}
	route, reason, ok := p.Router.Route(ev)
	if !ok {
		it.Filtered = reason
		return it
	}
	it.Route, it.Routed = route, true
	return it
}

// Params returns the parameters of a job on it's route (Params alone when
// it follows none).
func (p *Planner) params(it *Planned) Params {
	if !it.Routed {
		return p.Params
	}
	return it.Route.Params(p.Params)
}

// Resolve makes it's job, once (a resolved it is left as it is): a
// removal's delete job, or the job of the object version (Objects.Resolve,
// with final the caller's patience for an incomplete file set) or of the
// local file (Files.Source) the event names. An event the trigger gate
// dropped is resolved with Params as they are (inspect describes what it
// would be). What fails before a job exists is it.Err (classified as in
// KindOf), with it.Source naming it.
func (p *Planner) Resolve(ctx context.Context, it *Planned, final bool) {
	if it.Resolved {
		return
	}
	it.Resolved = true
	params := p.params(it)
	ev := it.Event
	if ev.Removed() {
		src := Source{Bucket: ev.Bucket, Key: ev.Key, VersionToken: ev.DeleteVersionToken(), Order: ev.Order(), Store: ev.Store}
		it.Source = src.String()
		it.Job, it.Err = NewDeleteJob(src, params)
		return
	}
	var (
		src Source
		f   Fetcher
		err error
	)
	if it.Path != "" {
		src, f, err = p.Files.Source(it.Path)
	} else {
		src, f, err = p.Objects.Resolve(ctx, ev, final)
	}
	if err != nil {
		it.Source, it.Err = ev.String(), err
		return
	}
	it.Source = src.String()
	if p.Current != nil {
		cur, err := p.Current.CurrentGeneration(ctx, src.Bucket, src.Key, params.Target, params.PipelineVersion)
		if err != nil {
			it.Err = err
			return
		}
		params.Replaces = cur
	}
	job, err := NewJob(src, params, f)
	if err != nil {
		it.Err = err
		return
	}
	job.Guards = p.Guards.Over(it.Route.Options.Guards)
	it.Job = job
}

// PlanMessage is Message, then Resolve of every event that passed.
func (p *Planner) PlanMessage(ctx context.Context, body []byte, final bool) ([]Planned, error) {
	its, err := p.Message(body)
	for i := range its {
		if its[i].Passed() {
			p.Resolve(ctx, &its[i], final)
		}
	}
	return its, err
}

// PlanEvent is Event, then Resolve when the event passed.
func (p *Planner) PlanEvent(ctx context.Context, ev Event, path string, final bool) Planned {
	it := p.Event(ev, path)
	if it.Passed() {
		p.Resolve(ctx, &it, final)
	}
	return it
}

// PlanPath plans the local file path as a created event of bucket
// LocalBucket keyed by its cleaned absolute path (the key of its job),
// sized by Files.Size (-1 when it is gone): the job of `geoingest ingest
// PATH` and `replay PATH`.
func (p *Planner) PlanPath(ctx context.Context, path string) Planned {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	size, err := p.Files.Size(path)
	if err != nil {
		size = -1
	}
	ev := Event{Name: "ObjectCreated:Put", Bucket: LocalBucket, Key: abs, RawKey: abs, Size: size}
	it := p.PlanEvent(ctx, ev, path, true)
	if it.Err != nil && it.Source == ev.String() {
		it.Source = Source{Bucket: LocalBucket, Key: abs}.String()
	}
	return it
}
