package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/localfs"
	"github.com/geoingest/geoingest/ingest/s3"
	"github.com/stretchr/testify/require"
)

// s3Body is evs as one S3 event notification.
func s3Body(t *testing.T, evs ...ingest.Event) []byte {
	t.Helper()
	var recs []map[string]any
	for _, ev := range evs {
		recs = append(recs, map[string]any{
			"eventVersion": "2.1", "eventSource": "aws:s3", "eventTime": "2026-01-02T03:04:05.000Z", "eventName": ev.Name,
			"s3": map[string]any{"bucket": map[string]any{"name": ev.Bucket},
				"object": map[string]any{"key": ev.Key, "size": ev.Size, "eTag": ev.ETag, "versionId": ev.VersionID, "sequencer": ev.Sequencer}},
		})
	}
	b, err := json.Marshal(map[string]any{"Records": recs})
	require.NoError(t, err)
	return b
}

// countingObjects counts the resolutions of an ObjectSource.
type countingObjects struct {
	ingest.ObjectSource
	n int
}

func (c *countingObjects) Resolve(ctx context.Context, ev ingest.Event, final bool) (ingest.Source, ingest.Fetcher, error) {
	c.n++
	return c.ObjectSource.Resolve(ctx, ev, final)
}

// currentIs is a ledger whose every source's current generation is job.
type currentIs string

func (c currentIs) CurrentGeneration(context.Context, string, string, string, string) (string, error) {
	return string(c), nil
}

func TestPlanMessage(t *testing.T) {
	ctx := context.Background()
	routes, err := ingest.ParseRoutes([]string{"parcels/=parcels?source-srid=2154&guard-shrink=0.5", "admin/=admin_units+deletes"})
	require.NoError(t, err)
	objects := &countingObjects{ObjectSource: s3.Objects{}} // no client: none of these keys needs a lookup
	base := ingest.DefaultParams("")
	base.PipelineVersion = "v7"
	pl := &ingest.Planner{Router: ingest.NewRouter(routes, nil), Objects: objects, Params: base}

	created := func(key string) ingest.Event {
		return ingest.Event{Name: "ObjectCreated:Put", Bucket: "b", Key: key, Size: 10, ETag: "e1", Sequencer: "01"}
	}
	removed := func(key string) ingest.Event {
		return ingest.Event{Name: "ObjectRemoved:Delete", Bucket: "b", Key: key, Sequencer: "02"}
	}
	body := s3Body(t,
		created("parcels/a.geojson"),
		created("parcels/a.dbf"),
		created("other/a.geojson"),
		removed("parcels/a.geojson"),
		removed("admin/u.geojson"),
		ingest.Event{Name: "ObjectCreated:Put", Bucket: "b", Key: "parcels/empty.geojson", ETag: "e0"},
	)

	// The trigger gate alone does no I/O.
	its, err := pl.Message(body)
	require.NoError(t, err)
	require.Zero(t, objects.n)
	var filtered []string
	for _, it := range its {
		filtered = append(filtered, it.Filtered)
	}
	require.Equal(t, []string{"", ingest.FilterSidecar, ingest.FilterNoRoute, ingest.FilterRemoval, "", ingest.FilterEmpty}, filtered)

	its, err = pl.PlanMessage(ctx, body, false)
	require.NoError(t, err)
	require.Equal(t, 1, objects.n, "only the created event that passed is resolved; a removal needs no lookup")

	// The created parcel: the route's options and guards, and the key
	// that the same job made by hand has.
	write := its[0]
	require.True(t, write.Resolved)
	require.NoError(t, write.Err)
	require.Equal(t, "parcels", write.Job.Params.Target)
	require.Equal(t, 2154, write.Job.Params.SourceSRID)
	require.Equal(t, "v7", write.Job.Params.PipelineVersion)
	require.Equal(t, 0.5, write.Job.Guards.Shrink)
	ev := write.Event
	want, err := ingest.NewJob(ingest.Source{Bucket: "b", Key: "parcels/a.geojson", VersionToken: "e1", Order: ev.Order()},
		ingest.RouteParams(routes[0], "v7"), nil)
	require.NoError(t, err)
	require.Equal(t, want.ID, write.Job.ID)
	require.Equal(t, "s3://b/parcels/a.geojson", write.Source)

	// The mirrored removal: a delete job, keyed by the removal.
	del := its[4]
	require.NoError(t, del.Err)
	require.True(t, del.Job.Delete)
	require.Equal(t, "admin_units", del.Job.Params.Target)
	wantDel, err := ingest.NewDeleteJob(ingest.Source{Bucket: "b", Key: "admin/u.geojson", VersionToken: "delete:02", Order: del.Event.Order()},
		ingest.RouteParams(routes[1], "v7"))
	require.NoError(t, err)
	require.Equal(t, wantDel.ID, del.Job.ID)

	// Resolving again does nothing: each event is resolved once.
	pl.Resolve(ctx, &its[0], false)
	require.Equal(t, 1, objects.n)

	// Filtered events are not resolved by PlanMessage.
	require.False(t, its[1].Resolved)

	// An undecodable body is a Permanent error, with no events.
	_, err = pl.Message([]byte("not json"))
	require.Error(t, err)
	require.Equal(t, ingest.Permanent, ingest.KindOf(err))
}

func TestPlanResolveFailures(t *testing.T) {
	ctx := context.Background()
	pl := &ingest.Planner{Objects: s3.Objects{}, Params: ingest.DefaultParams("parcels")}
	// No version: the source cannot be made; the failure names the event.
	it := pl.PlanEvent(ctx, ingest.Event{Name: "ObjectCreated:Put", Bucket: "b", Key: "k.geojson", Size: 3}, "", true)
	require.Error(t, it.Err)
	require.Equal(t, ingest.Permanent, ingest.KindOf(it.Err))
	require.Equal(t, "ObjectCreated:Put s3://b/k.geojson", it.Source)

	// Bad parameters: the failure names the source.
	bad := ingest.DefaultParams("nowhere")
	pl.Params = bad
	it = pl.PlanEvent(ctx, ingest.Event{Name: "ObjectCreated:Put", Bucket: "b", Key: "k.geojson", Size: 3, ETag: "e"}, "", true)
	require.Error(t, it.Err)
	require.Equal(t, "s3://b/k.geojson", it.Source)
}

func TestPlanFilteredEventGetsTheBaseParameters(t *testing.T) {
	routes, err := ingest.ParseRoutes([]string{"parcels/=parcels"})
	require.NoError(t, err)
	pl := &ingest.Planner{Router: ingest.NewRouter(routes, nil), Objects: s3.Objects{}, Params: ingest.DefaultParams("admin_units")}
	it := pl.Event(ingest.Event{Name: "ObjectCreated:Put", Bucket: "b", Key: "x/k.geojson", Size: 3, ETag: "e"}, "")
	require.Equal(t, ingest.FilterNoRoute, it.Filtered)
	pl.Resolve(context.Background(), &it, true)
	require.NoError(t, it.Err)
	require.Equal(t, "admin_units", it.Job.Params.Target, "inspect describes a filtered upload with the parameters it was given")
}

func TestPlanPath(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.geojson")
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"FeatureCollection","features":[]}`), 0o644))
	p := ingest.DefaultParams("parcels")
	guards := ingest.Guards{Force: true, Reason: "r"}
	pl := &ingest.Planner{Files: localfs.Files{}, Params: p, Guards: guards}

	it := pl.PlanPath(ctx, path)
	require.NoError(t, it.Err)
	src, _, err := localfs.Source(path)
	require.NoError(t, err)
	want, err := ingest.NewJob(src, p, nil)
	require.NoError(t, err)
	require.Equal(t, want.ID, it.Job.ID, "the key `ingest PATH` makes is the file's")
	require.Equal(t, guards, it.Job.Guards)
	require.Equal(t, "file://"+path, it.Source)

	// Replace-if-match: the current generation seen when the job is made.
	pl.Current = currentIs("job-before")
	it = pl.PlanPath(ctx, path)
	require.NoError(t, it.Err)
	require.Equal(t, "job-before", it.Job.Params.Replaces)
	require.NotEqual(t, want.ID, it.Job.ID)

	// A missing file: no job, the failure names the file.
	gone := filepath.Join(dir, "gone.geojson")
	it = pl.PlanPath(ctx, gone)
	require.Error(t, it.Err)
	require.True(t, errors.Is(it.Err, os.ErrNotExist) || ingest.KindOf(it.Err) == ingest.Permanent)
	require.Equal(t, "file://"+gone, it.Source)
}
