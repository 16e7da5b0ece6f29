package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/geoingest/geoingest/ingest"
)

func init() {
	register(&command{name: "changes", summary: "what a job or a source's versions changed: counts, features, the change feed", run: runChanges})
}

// runChanges prints change records (docs/design.md, "Versions as
// changes"):
//   - --job JOB: the job's counts and its changed features; with
//     --format json one object whose counts holds added, removed,
//     geometry, attributes and unchanged, and whose features lists them;
//   - SOURCE (a URL as the tables print it, or a local PATH: sourceArg): the source's records,
//     oldest first, recorded at or after --since;
//   - --follow: the change feed, from --after CURSOR (the cursor of the
//     last record a consumer processed; default the start), polling
//     --poll until interrupted; one JSON object per line with its cursor.
func runChanges(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("changes", "SOURCE | --job JOB | --follow [flags]")
	var d dbFlags
	m.addDBFlags(fs, &d)
	job := fs.String("job", "", "the job whose changes to print")
	since := fs.String("since", "", "with SOURCE: only records since DURATION ago (e.g. 720h), since a DATE (2026-01-31, midnight UTC) or since an RFC 3339 TIMESTAMP")
	format := fs.String("format", "table", "table, csv, json or geojson (the changed features' boxes, new where there is one)")
	follow := fs.Bool("follow", false, "print the change feed as it grows, one JSON record per line")
	after := fs.String("after", "", "with --follow: resume after this cursor")
	poll := fs.Duration("poll", 2*time.Second, "with --follow: how often to look for new records")
	hook := fs.String("webhook", "", "with --follow: POST each record to this URL instead of printing it, at least once, resuming from the subscriber's durable cursor (signed with GEOINGEST_WEBHOOK_SECRET)")
	expireZoom := fs.String("expire-zoom", "", "with --webhook: put each job's expired tiles in this zoom range MIN-MAX (capped by --max-tiles) in the payload, as a route's expire-zoom does")
	hookName := fs.String("subscriber", "", "with --webhook: the durable subscriber's name (default \"webhook URL\")")
	tiles := fs.Bool("tiles", false, "with --job: the z/x/y map tiles the job expired (table: one z/x/y a line, as tile expiry lists are)")
	zoom := fs.String("zoom", ingest.DefaultTileZoom.String(), "with --tiles: the zoom range MIN-MAX")
	maxTiles := fs.Int64("max-tiles", ingest.DefaultTileZoom.MaxTiles, "with --tiles: at most this many tiles (zooms are listed from MIN while they fit)")
	buffer := fs.Float64("tile-buffer", ingest.DefaultTileZoom.Buffer, "with --tiles: the tile server's buffer around a tile, as a fraction of the tile")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch *format {
	case "table", "csv", "json", "geojson":
	default:
		return m.badFormat("changes", *format, "table, csv, json or geojson")
	}
	modes := 0
	for _, on := range []bool{*job != "", fs.NArg() == 1, *follow} {
		if on {
			modes++
		}
	}
	switch {
	case fs.NArg() > 1:
		return usageError(fs, fmt.Sprintf("one SOURCE at most, not %d", fs.NArg()))
	case modes == 0:
		return usageError(fs, "give a SOURCE, --job JOB or --follow")
	case modes > 1:
		return usageError(fs, "give one of SOURCE, --job JOB and --follow")
	}
	// A flag of another mode would be ignored: --since on a job, --after
	// without --follow. Refused, naming what it goes with.
	var misplaced error
	fs.Visit(func(f *flag.Flag) {
		var with string
		switch f.Name {
		case "since":
			if fs.NArg() == 1 {
				return
			}
			with = "SOURCE"
		case "after", "poll", "webhook":
			if *follow {
				return
			}
			with = "--follow"
		case "expire-zoom", "subscriber":
			if *hook != "" {
				return
			}
			with = "--follow --webhook URL"
		case "zoom", "tile-buffer":
			if *tiles {
				return
			}
			with = "--job JOB --tiles"
		case "max-tiles":
			if *tiles || *expireZoom != "" {
				return
			}
			with = "--job JOB --tiles or --expire-zoom"
		case "format":
			if !*follow || *format == "json" {
				return
			}
			with = "SOURCE or --job JOB (--follow prints one JSON object a line)"
		default:
			return
		}
		if misplaced == nil {
			misplaced = fmt.Errorf("--%s goes with %s", f.Name, with)
		}
	})
	if misplaced != nil {
		fmt.Fprintf(m.Stderr, "geoingest changes: %v\n", misplaced)
		return errUsage
	}
	tz, err := ingest.ParseTileZoom(*zoom, ingest.DefaultTileZoom)
	if err != nil || (*tiles && *job == "") {
		if err == nil {
			err = errors.New("--tiles needs --job")
		}
		return m.badParams("changes", err)
	}
	tz.MaxTiles, tz.Buffer = *maxTiles, *buffer
	if *tiles && *format == "geojson" {
		return m.badFormat("changes", *format, "table, csv or json with --tiles")
	}
	if *maxTiles < 1 {
		fmt.Fprintf(m.Stderr, "geoingest changes: --max-tiles %d: want at least 1\n", *maxTiles)
		return errUsage
	}
	if !(*buffer >= 0 && *buffer <= 1) { // NaN too
		fmt.Fprintf(m.Stderr, "geoingest changes: --tile-buffer %g: want a fraction of a tile in [0, 1]\n", *buffer)
		return errUsage
	}
	if *after != "" {
		// The store's rule (a record's cursor is a whole number), checked
		// before the database is opened, as every bad flag value is.
		if _, err := strconv.ParseUint(*after, 10, 64); err != nil {
			fmt.Fprintf(m.Stderr, "geoingest changes: --after %q: want the cursor of a record (a whole number, as the feed prints it)\n", *after)
			return errUsage
		}
	}
	if *poll <= 0 {
		fmt.Fprintf(m.Stderr, "geoingest changes: --poll %s: want a positive duration (2s)\n", *poll)
		return errUsage
	}
	var expire ingest.TileZoom
	if *hook != "" {
		if _, err := ingest.ParseWebhookURL(*hook); err != nil {
			fmt.Fprintf(m.Stderr, "geoingest changes: --%v\n", err)
			return errUsage
		}
	}
	if *expireZoom != "" {
		if expire, err = ingest.ParseTileZoom(*expireZoom, ingest.DefaultTileZoom); err != nil {
			fmt.Fprintf(m.Stderr, "geoingest changes: --expire-zoom: %v\n", err)
			return errUsage
		}
	}
	var from time.Time
	if *since != "" {
		t, err := ingest.ParseSince(*since, time.Now())
		if err != nil {
			fmt.Fprintf(m.Stderr, "geoingest changes: --since: %v\n", err)
			return errUsage
		}
		from = t
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	log, ok := a.store.(ingest.ChangeLog)
	if !ok {
		return errors.New("this store keeps no change records")
	}
	if *job != "" {
		if *job, err = m.jobID(ctx, "changes", a.store, *job); err != nil {
			return err
		}
	}
	p := changePrinter{m: m, format: *format}
	switch {
	case *follow && *hook != "":
		subs, ok := a.store.(ingest.Subscribers)
		if !ok {
			return errors.New("this store keeps no subscribers")
		}
		w := &ingest.Webhook{URL: *hook, Name: *hookName, Secret: []byte(m.Getenv("GEOINGEST_WEBHOOK_SECRET")), Feed: log,
			Subscribers: subs, Holder: webhookHolder(), Log: m.Log, Poll: *poll}
		if *expireZoom != "" {
			ez := expire
			ez.MaxTiles = *maxTiles
			w.Tiles, _ = a.store.(ingest.TileExpiry)
			w.Select = func(ingest.Changes) (bool, *ingest.TileZoom) { return true, &ez }
		}
		return w.Run(ctx)
	case *follow:
		return followChanges(ctx, m, log, *after, *poll)
	case *tiles:
		te, ok := a.store.(ingest.TileExpiry)
		if !ok {
			return errors.New("this store lists no expired tiles")
		}
		e, err := te.ExpiredTiles(ctx, *job, tz)
		if err != nil {
			return noChangesWhy(ctx, a.store, *job, err)
		}
		return p.tiles(e)
	case *job != "":
		c, feats, err := log.JobChanges(ctx, *job, true)
		if err != nil {
			return noChangesWhy(ctx, a.store, *job, err)
		}
		return p.job(c, feats)
	default:
		bucket, key := sourceArg(fs.Arg(0))
		if bucket == "" {
			fmt.Fprintf(m.Stderr, "geoingest changes: source %q: %s\n", fs.Arg(0), sourceArgUsage)
			return errUsage
		}
		cs, err := log.SourceChanges(ctx, bucket, key, from)
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			if err := requireKnownSource(ctx, a.store, fs.Arg(0), bucket, key); err != nil {
				return err
			}
		}
		return p.records(cs)
	}
}

// noChangesWhy adds to err, when it says that job has no change record
// (ingest.ErrNoChanges), the reason when the job is a version held
// pending approval: its changes are recorded when it is approved. Any
// other error, or another job, is err as it is.
func noChangesWhy(ctx context.Context, store ingest.ConsoleReader, job string, err error) error {
	if !errors.Is(err, ingest.ErrNoChanges) {
		return err
	}
	rec, rerr := store.ConsoleJob(ctx, job)
	if rerr != nil || rec.Ledger == nil || rec.Ledger.Status != "pending" {
		return err
	}
	return fmt.Errorf("%w: the version is pending approval (a guard held it), and its changes are recorded when it is approved; "+
		"see why with geoingest pending show %s, apply it with geoingest pending approve %s --reason TEXT", err, short(job), short(job))
}

// followChanges prints the feed after cursor, one record per line, until
// ctx ends. A consumer stores the cursor of the last line it processed.
func followChanges(ctx context.Context, m *Main, log ingest.ChangeLog, cursor string, poll time.Duration) error {
	enc := jsonEncoder(m.Stdout)
	for {
		cs, err := log.ChangeFeed(ctx, cursor, 500)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, c := range cs {
			if err := enc.Encode(c); err != nil {
				return err
			}
			cursor = c.Cursor
		}
		if len(cs) == 500 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

type changePrinter struct {
	m      *Main
	format string
}

func (p changePrinter) job(c ingest.Changes, feats []ingest.FeatureChange) error {
	switch p.format {
	case "json":
		if feats == nil {
			feats = []ingest.FeatureChange{}
		}
		return p.json(struct {
			ingest.Changes
			Features []ingest.FeatureChange `json:"features"`
		}{c, feats})
	case "geojson":
		return p.geojson(feats)
	case "csv":
		w := csv.NewWriter(p.m.Stdout)
		_ = w.Write([]string{"job", "feature_id", "kind", "matched_by", "area_delta_m2", "old_bbox", "new_bbox", "lineage"})
		for _, f := range feats {
			_ = w.Write([]string{f.Job, strconv.FormatInt(f.FeatureID, 10), f.Kind, f.MatchedBy,
				strconv.FormatFloat(f.AreaDeltaM2, 'f', 3, 64), string(f.OldBBox), string(f.NewBBox), lineageText(f)})
		}
		w.Flush()
		return w.Error()
	}
	tw := tabwriter.NewWriter(p.m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "job\t%s\nsource\t%s\nreplaced\t%s\n", c.Job, ingest.Source{Bucket: c.Bucket, Key: c.Key}, orNone(c.Base))
	fmt.Fprintf(tw, "added\t%d\nremoved\t%d\ngeometry\t%d\nattributes\t%d\nunchanged\t%d\n",
		c.Counts.Added, c.Counts.Removed, c.Counts.Geometry, c.Counts.Attributes, c.Counts.Unchanged)
	fmt.Fprintf(tw, "matched\tkey %d, content %d, overlap %d\nduplicate keys\t%d\nlineage\t%d\n\n",
		c.Matched.Key, c.Matched.Content, c.Matched.Overlap, c.DuplicateKeys, c.Lineage)
	fmt.Fprintln(tw, "FEATURE\tKIND\tMATCHED BY\tAREA Δ (m²)\tLINEAGE")
	for _, f := range feats {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.1f\t%s\n", f.FeatureID, f.Kind, orDash(f.MatchedBy), f.AreaDeltaM2, orDash(lineageText(f)))
	}
	return tw.Flush()
}

// lineageText is a changed feature's lineage in a table or CSV: "-> 12 13"
// for a removed feature's successors, "<- 7 8" for an added one's
// predecessors, "" for none.
func lineageText(f ingest.FeatureChange) string {
	ids, arrow := f.Successors, "->"
	if len(f.Predecessors) > 0 {
		ids, arrow = f.Predecessors, "<-"
	}
	if len(ids) == 0 {
		return ""
	}
	s := arrow
	for _, id := range ids {
		s += " " + strconv.FormatInt(id, 10)
	}
	return s
}

// tiles prints an expired-tile list: in a table, one z/x/y a line (the
// format of osm2pgsql's and imposm's expire lists), preceded by a comment
// line when the cap cut it short.
func (p changePrinter) tiles(e ingest.ExpiredTiles) error {
	switch p.format {
	case "json":
		return p.json(struct {
			ingest.ExpiredTiles
			Truncated bool `json:"truncated"`
		}{e, e.Truncated()})
	case "csv":
		w := csv.NewWriter(p.m.Stdout)
		_ = w.Write([]string{"z", "x", "y"})
		for _, t := range e.Tiles {
			_ = w.Write([]string{strconv.Itoa(t.Z), strconv.Itoa(t.X), strconv.Itoa(t.Y)})
		}
		w.Flush()
		return w.Error()
	}
	if e.Truncated() {
		fmt.Fprintf(p.m.Stderr, "geoingest changes: --max-tiles cut the list at zoom %d of %d: drop the zoom %d tiles with their descendants\n",
			e.Deepest, e.MaxZoom, e.Deepest)
	}
	for _, t := range e.Tiles {
		fmt.Fprintln(p.m.Stdout, t)
	}
	return nil
}

func (p changePrinter) records(cs []ingest.Changes) error {
	switch p.format {
	case "json":
		if cs == nil {
			cs = []ingest.Changes{}
		}
		return p.json(cs)
	case "geojson":
		var fc []map[string]any
		for _, c := range cs {
			fc = append(fc, map[string]any{"type": "Feature", "geometry": c.BBox,
				"properties": map[string]any{"job": c.Job, "recorded_at": c.RecordedAt, "added": c.Counts.Added, "removed": c.Counts.Removed,
					"geometry": c.Counts.Geometry, "attributes": c.Counts.Attributes, "unchanged": c.Counts.Unchanged}})
		}
		return p.json(map[string]any{"type": "FeatureCollection", "features": orEmpty(fc)})
	case "csv":
		w := csv.NewWriter(p.m.Stdout)
		_ = w.Write([]string{"job", "recorded_at", "replaced", "added", "removed", "geometry", "attributes", "unchanged", "cursor", "target_table"})
		for _, c := range cs {
			_ = w.Write([]string{c.Job, c.RecordedAt.Format(time.RFC3339Nano), c.Base, itoa(c.Counts.Added), itoa(c.Counts.Removed),
				itoa(c.Counts.Geometry), itoa(c.Counts.Attributes), itoa(c.Counts.Unchanged), c.Cursor, c.Target})
		}
		w.Flush()
		return w.Error()
	}
	tw := tabwriter.NewWriter(p.m.Stdout, 0, 4, 2, ' ', 0)
	// A source's records are of every target it was ingested into: the
	// target tells two first versions of one file apart.
	fmt.Fprintln(tw, "RECORDED\tJOB\tTARGET\tADDED\tREMOVED\tGEOMETRY\tATTRIBUTES\tUNCHANGED")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", c.RecordedAt.Format("2006-01-02 15:04:05Z07:00"), short(c.Job), c.Target,
			c.Counts.Added, c.Counts.Removed, c.Counts.Geometry, c.Counts.Attributes, c.Counts.Unchanged)
	}
	return tw.Flush()
}

func (p changePrinter) geojson(feats []ingest.FeatureChange) error {
	var fc []map[string]any
	for _, f := range feats {
		box := f.NewBBox
		if box == "" {
			box = f.OldBBox
		}
		fc = append(fc, map[string]any{"type": "Feature", "id": f.FeatureID, "geometry": box,
			"properties": map[string]any{"job": f.Job, "kind": f.Kind, "matched_by": f.MatchedBy, "area_delta_m2": f.AreaDeltaM2}})
	}
	return p.json(map[string]any{"type": "FeatureCollection", "features": orEmpty(fc)})
}

func (p changePrinter) json(v any) error { return writeJSON(p.m.Stdout, v) }

func rawOrNull(geo string) json.RawMessage {
	if geo == "" {
		return json.RawMessage("null")
	}
	return json.RawMessage(geo)
}

func orEmpty(fc []map[string]any) []map[string]any {
	if fc == nil {
		return []map[string]any{}
	}
	return fc
}

func orNone(s string) string {
	if s == "" {
		return "(none: the source's first version)"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// requireKnownSource returns an error naming arg when no job was ever
// recorded for the source bucket/key (ingest.SourceLookup): an empty
// answer about a source geoingest never saw is most likely a mistyped
// path or URL. nil when the store cannot tell.
func requireKnownSource(ctx context.Context, store any, arg, bucket, key string) error {
	l, ok := store.(ingest.SourceLookup)
	if !ok {
		return nil
	}
	known, err := l.SourceKnown(ctx, bucket, key)
	if err != nil || known {
		return err
	}
	// A local path is named with the source ingest made of it; a URL
	// (gs://, azblob:// too: Source has no store here) as it was given.
	named := arg
	if src := (ingest.Source{Bucket: bucket, Key: key}).String(); bucket == ingest.LocalBucket && src != arg {
		named = arg + " (" + src + ")"
	}
	return fmt.Errorf("no job was ever recorded for source %s: geoingest jobs sources lists the sources", named)
}
