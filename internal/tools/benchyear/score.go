package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The changelog against the truth: each version's feature_changes, read
// through the feature ids of its source's current rows before and after
// it (each row's parcel_id is its identity in the simulation), compared
// kind by kind with what the simulation changed.

// kinds are the changelog's kinds, in the order they are printed.
var kinds = []string{"added", "removed", "geometry", "attributes"}

// tally counts, per kind, the features the changelog reported, those of
// them that are true (the right parcel, and for a changed one the
// feature id it had before), and the true changes.
type tally struct {
	Reported, Correct, Truth map[string]int64
	// Missed are the parcels the simulation changed in place (geometry
	// or attributes) whose change the changelog did not record as such.
	Missed []string
}

func newTally() tally {
	return tally{Reported: map[string]int64{}, Correct: map[string]int64{}, Truth: map[string]int64{}}
}

func (t tally) add(o tally) {
	for _, k := range kinds {
		t.Reported[k] += o.Reported[k]
		t.Correct[k] += o.Correct[k]
		t.Truth[k] += o.Truth[k]
	}
	t.Missed = append(t.Missed, o.Missed...)
}

// pr is the precision and recall of kind ("" for every kind together); 1
// where there is nothing to report or to find.
func (t tally) pr(kind string) (p, r float64) {
	var rep, cor, tru int64
	for _, k := range kinds {
		if kind == "" || k == kind {
			rep, cor, tru = rep+t.Reported[k], cor+t.Correct[k], tru+t.Truth[k]
		}
	}
	p, r = 1, 1
	if rep > 0 {
		p = float64(cor) / float64(rep)
	}
	if tru > 0 {
		r = float64(cor) / float64(tru)
	}
	return p, r
}

func (t tally) String() string {
	var b strings.Builder
	p, r := t.pr("")
	fmt.Fprintf(&b, "P %.4f R %.4f (", p, r)
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		p, r := t.pr(k)
		fmt.Fprintf(&b, "%s %d/%d/%d %.3f/%.3f", k, t.Correct[k], t.Reported[k], t.Truth[k], p, r)
	}
	b.WriteString(")")
	return b.String()
}

// currentIDs returns a source's current rows as feature id -> parcel_id.
func currentIDs(ctx context.Context, pool *pgxpool.Pool, key string) (map[int64]string, error) {
	rows, err := pool.Query(ctx, `
		SELECT p.feature_id, p.properties->>'parcel_id' FROM geoingest_current_parcels p
		JOIN sources s ON s.current_job_id = p.job_id AND s.target_table = 'parcels'
		WHERE s.source_bucket = 'bench' AND s.source_key = $1`, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var apn string
		if err := rows.Scan(&id, &apn); err != nil {
			return nil, err
		}
		out[id] = apn
	}
	return out, rows.Err()
}

// score compares job's change records with the truth t: before and after
// are the source's current rows (feature id -> parcel_id) before and after
// the job.
func score(ctx context.Context, pool *pgxpool.Pool, job string, t truth, before, after map[int64]string) (tally, error) {
	s := newTally()
	s.Truth["added"], s.Truth["removed"] = int64(len(t.added)), int64(len(t.removed))
	s.Truth["geometry"], s.Truth["attributes"] = int64(len(t.geometry)), int64(len(t.attributes))
	idBefore := make(map[string]int64, len(before))
	for id, apn := range before {
		idBefore[apn] = id
	}
	rows, err := pool.Query(ctx, `SELECT feature_id, kind FROM feature_changes WHERE job_id = $1`, job)
	if err != nil {
		return s, err
	}
	defer rows.Close()
	recorded := map[string]bool{} // parcels recorded as changed in place
	for rows.Next() {
		var id int64
		var kind string
		if err := rows.Scan(&id, &kind); err != nil {
			return s, err
		}
		switch kind {
		case "added":
			s.Reported["added"]++
			if t.added[after[id]] {
				s.Correct["added"]++
			}
		case "removed":
			s.Reported["removed"]++
			if t.removed[before[id]] {
				s.Correct["removed"]++
			}
		default: // geometry, attributes, geometry+attributes: the same parcel, its feature id kept
			apn, ok := after[id]
			kept := ok && idBefore[apn] == id
			recorded[apn] = kept
			for _, k := range strings.Split(kind, "+") {
				s.Reported[k]++
				if kept && ((k == "geometry" && t.geometry[apn]) || (k == "attributes" && t.attributes[apn])) {
					s.Correct[k]++
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		return s, err
	}
	rows.Close()
	for _, m := range []map[string]bool{t.geometry, t.attributes} {
		for apn := range m {
			if !recorded[apn] {
				recorded[apn] = true // once
				s.Missed = append(s.Missed, explainMiss(ctx, pool, job, apn, idBefore[apn]))
			}
		}
	}
	return s, nil
}

// explainMiss says what the changelog made of a parcel changed in place
// that it did not record as changed: its records by the old feature id,
// and the intersection over union of its old geometry (in the history)
// and its new one.
func explainMiss(ctx context.Context, pool *pgxpool.Pool, job, apn string, oldID int64) string {
	var kinds string
	var iou float64
	err := pool.QueryRow(ctx, `
		SELECT coalesce((SELECT string_agg(kind || ' ' || feature_id, ', ') FROM feature_changes WHERE job_id = $1 AND feature_id = $3), 'nothing'),
		       coalesce((SELECT ST_Area(ST_Intersection(h.geom, p.geom)) / nullif(ST_Area(ST_Union(h.geom, p.geom)), 0)
		        FROM geoingest_history_rows($1, 'parcels') h, geoingest_current_parcels p
		        WHERE h.feature_id = $3 AND p.job_id = $1 AND p.properties->>'parcel_id' = $2 LIMIT 1), -1)`,
		job, apn, oldID).Scan(&kinds, &iou)
	if err != nil {
		return fmt.Sprintf("%s: %v", apn, err)
	}
	return fmt.Sprintf("%s (feature %d): recorded %s; IoU of its old and new geometry %.3f", apn, oldID, kinds, iou)
}
