package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ConsoleReader is the one read model of jobs: what the operator's
// console, `geoingest jobs` and `geoingest verify` read: jobs, one job's
// record, sources, claims in progress, an overview, and the ledger's
// reconciliation against the feature tables, all read-only.
// postgis.Console is the implementation (and the Store's Ledger reads
// through it).
//
// Errors: an error of the database is Transient; a query the caller got
// wrong (an unknown state, a cursor that does not parse) is Permanent;
// ConsoleJob returns ErrNoSuchJob for a job id nobody has claimed.
type ConsoleReader interface {
	// ConsoleJobs lists the jobs q selects, the most recently claimed
	// first, one page at a time.
	ConsoleJobs(ctx context.Context, q JobQuery) (JobPage, error)
	// ConsoleJob is everything recorded about one job.
	ConsoleJob(ctx context.Context, jobID string) (JobRecord, error)
	// ConsoleSources lists sources, the most recently changed first,
	// each with its current generation and its latest generations.
	ConsoleSources(ctx context.Context, q SourceQuery) (SourcePage, error)
	// ConsoleClaims lists the claims not yet settled (state CLAIMED):
	// in flight under a live lease, or with a lease that has ended.
	ConsoleClaims(ctx context.Context, limit int) ([]ClaimInfo, error)
	// ConsoleOverview counts jobs by state and tells when the report
	// assignments were last refreshed.
	ConsoleOverview(ctx context.Context) (Overview, error)
	// Verify checks the ledger against the feature tables and the stored
	// report assignments. It only reads; inconsistencies are Problems in
	// the result with a nil error.
	Verify(ctx context.Context) (*Verification, error)
	// VerifyScope is Verify restricted to scope (the incremental mode):
	// the same checks, of the sources and claims in scope only, at a cost
	// that follows their number and size. A zero scope is Verify. Rows
	// whose job_ref no ledger job has are found only by the full check.
	VerifyScope(ctx context.Context, scope VerifyScope) (*Verification, error)
}

// The states of a job as the console shows them. A claim that is not
// settled is in flight (its lease is live) or lease-expired (released
// after a transient failure, or its worker died: the next delivery takes
// it over). A failed job's claim is FAILED. A committed job's state is its
// ledger status.
const (
	StateFailed       = "failed"
	StateInFlight     = "in-flight"
	StateLeaseExpired = "lease-expired"
	StateCommitted    = "committed" // a filter only: every ledger status
)

// JobStates are the states a JobQuery may select.
var JobStates = []string{StateFailed, StateInFlight, StateLeaseExpired, StateCommitted,
	"current", "superseded", "replaced", "retired", "deleted", "pending", "rejected"}

// ClaimStates are the claim gate's own states, which a JobQuery may
// select too (as `geoingest jobs list --state` names them): CLAIMED is in
// flight or lease-expired, COMMITTED is committed, FAILED is failed.
var ClaimStates = []string{"CLAIMED", "COMMITTED", "FAILED"}

// DefaultPage and MaxPage bound a page of the console's lists.
const (
	DefaultPage = 50
	MaxPage     = 500
)

// JobQuery selects jobs for ConsoleJobs. Empty fields match everything.
type JobQuery struct {
	// State is one of JobStates or ClaimStates.
	State string
	// Source is a source key prefix, or a source's URL prefix
	// (s3://bucket/prefix, file:///path): see ParseSourcePrefix.
	Source string
	// Target is a target table; it matches committed jobs only (a job
	// records its target when it is written).
	Target string
	// Since keeps the jobs first claimed at or after it.
	Since time.Time
	// Cursor is JobPage.Next of the previous page; "" for the first.
	Cursor string
	// Limit is the page size: DefaultPage when 0, at most MaxPage.
	Limit int
}

// Validate checks the state and clamps the limit.
func (q *JobQuery) Validate() error {
	if q.State != "" && !slices.Contains(JobStates, q.State) && !slices.Contains(ClaimStates, q.State) {
		return Permanentf("state %q: want one of %s, or a claim state: %s", q.State,
			strings.Join(JobStates, ", "), strings.Join(ClaimStates, ", "))
	}
	if q.Target != "" && !slices.Contains(Targets, q.Target) {
		return Permanentf("target %q: want one of %s", q.Target, strings.Join(Targets, ", "))
	}
	q.Limit = clampPage(q.Limit)
	return nil
}

func clampPage(n int) int {
	switch {
	case n <= 0:
		return DefaultPage
	case n > MaxPage:
		return MaxPage
	}
	return n
}

// ParseSourcePrefix splits a source filter into a bucket ("" for any)
// and a key prefix, as Source.String names a source: "s3://b/p",
// "gs://b/p" and "azblob://c/p" are bucket (or container) b or c, keys
// starting with p; "file:///d/" is local files under /d/; anything else
// is a key prefix in any bucket.
func ParseSourcePrefix(s string) (bucket, keyPrefix string) {
	for _, scheme := range []string{"s3", StoreGCS, StoreAzure} {
		if rest, ok := strings.CutPrefix(s, scheme+"://"); ok {
			b, k, _ := strings.Cut(rest, "/")
			return b, k
		}
	}
	if rest, ok := strings.CutPrefix(s, "file://"); ok {
		return LocalBucket, rest
	}
	return "", s
}

// JobPage is one page of jobs. Next is the cursor of the following page,
// "" on the last.
type JobPage struct {
	Jobs []JobSummary `json:"jobs"`
	Next string       `json:"next,omitempty"`
}

// JobSummary is one job in a list.
type JobSummary struct {
	JobID string `json:"job_id"`
	// State is one of the console's states: failed, in-flight,
	// lease-expired, or the ledger status of a committed job.
	State      string `json:"state"`
	ClaimState string `json:"claim_state"` // CLAIMED, COMMITTED, FAILED
	Source     string `json:"source"`
	// Target, PipelineVersion, Features, AreaM2 and CRSMethod are the
	// ledger's: empty until the job is committed.
	Target          string  `json:"target_table,omitempty"`
	PipelineVersion string  `json:"pipeline_version,omitempty"`
	Features        int64   `json:"features"`
	AreaM2          float64 `json:"area_m2"`
	// CRSMethod is how the CRS of the job's layers was found (authority,
	// identified, custom, override, default, none), "+"-joined when its
	// layers differ.
	CRSMethod string `json:"crs_method,omitempty"`
	// WriteSeconds is how long the write-gate transaction took, from its
	// first statement to the ledger's last update (parse, COPY, checks);
	// nil for jobs that wrote no features, and for jobs written before the
	// ledger recorded it.
	WriteSeconds *float64 `json:"write_seconds,omitempty"`
	Attempts     int32    `json:"attempts"`
	// Reason is the claim's last error: why a job failed, or why its
	// last attempt was released.
	Reason string `json:"reason,omitempty"`
	// Cause is a failure's cause (CauseOf), when it was recorded.
	Cause Cause `json:"cause,omitempty"`
	// Hint is what an operator can do about a failure (CauseHint).
	Hint        string     `json:"hint,omitempty"`
	Owner       string     `json:"owner"`
	LeaseUntil  time.Time  `json:"lease_until"`
	ClaimedAt   time.Time  `json:"claimed_at"` // the first claim
	UpdatedAt   time.Time  `json:"updated_at"` // the claim's last change
	CommittedAt *time.Time `json:"committed_at,omitempty"`
}

// JobRecord is everything recorded about one job: its claim, its ledger
// row and CRS record once committed, and its source's generations.
type JobRecord struct {
	Job JobSummary `json:"job"`
	// Claim is the job's claim record and its history.
	Claim ClaimRecord `json:"claim"`
	// Ledger is the job's ledger row (jobs), nil before it is committed.
	Ledger *LedgerRow `json:"ledger,omitempty"`
	// CRS is the CRS each layer was read in (written jobs only).
	CRS []LayerCRS `json:"crs,omitempty"`
	// SourceHistory is the latest generations of the job's source (same
	// target and pipeline version), newest first; committed jobs only.
	SourceHistory []Generation `json:"source_history,omitempty"`
}

// ClaimRecord is a job's row of the claim gate: when it was first
// claimed, how many attempts it has had, who holds or last held it, its
// lease and its last error; and History, its changes oldest first (the
// latest 20, from schema version 10 on).
type ClaimRecord struct {
	State      string       `json:"state"`
	Owner      string       `json:"owner"`
	LeaseUntil time.Time    `json:"lease_until"`
	Attempts   int32        `json:"attempts"`
	LastError  string       `json:"last_error,omitempty"`
	ClaimedAt  time.Time    `json:"first_claimed_at"`
	UpdatedAt  time.Time    `json:"updated_at"`
	History    []ClaimEvent `json:"history"`
}

// ClaimEvent is one change of a claim: claimed (first, taken over from
// an expired lease, or a re-run of a failed job), released (after a
// transient failure), committed or failed, by Owner in attempt Attempt.
// Heartbeats are not events.
type ClaimEvent struct {
	At         time.Time `json:"at"`
	Event      string    `json:"event"`
	Owner      string    `json:"owner"`
	Attempt    int32     `json:"attempt"`
	LeaseUntil time.Time `json:"lease_until"`
	Error      string    `json:"error,omitempty"`
}

// LedgerRow is a committed job's row of the ledger (jobs).
type LedgerRow struct {
	Status           string          `json:"status"`
	Target           string          `json:"target_table"`
	Pipeline         string          `json:"pipeline"`
	PipelineVersion  string          `json:"pipeline_version"`
	VersionToken     string          `json:"version_token"`
	OrderToken       string          `json:"order_token"`
	Params           json.RawMessage `json:"params"`
	ContentHash      string          `json:"content_hash"`
	FeaturesChecksum string          `json:"features_checksum"`
	Features         int64           `json:"features"`
	AreaM2           float64         `json:"area_m2"`
	SourceSRID       int             `json:"source_srid,omitempty"`
	Encoding         string          `json:"encoding,omitempty"`
	SkippedNull      int64           `json:"skipped_null"`
	SkippedType      int64           `json:"skipped_type"`
	// SkippedCast counts the features whose mapped values did not cast.
	SkippedCast     int64 `json:"skipped_cast"`
	RepairedInvalid int64 `json:"repaired_invalid"`
	// LinearisedCurves and DroppedZM count the features whose curves were
	// approximated by line segments, and whose Z or M were dropped.
	LinearisedCurves int64     `json:"linearised_curves"`
	DroppedZM        int64     `json:"dropped_zm"`
	CommittedAt      time.Time `json:"committed_at"`
	// SourceCurrentJob is the job id of the source's current generation
	// ("" if none): the job itself when it is current.
	SourceCurrentJob string `json:"source_current_job_id,omitempty"`
}

// Generation is one job of a source's history.
type Generation struct {
	JobID        string    `json:"job_id"`
	Status       string    `json:"status"`
	VersionToken string    `json:"version_token"`
	OrderToken   string    `json:"order_token,omitempty"`
	Features     int64     `json:"features"`
	AreaM2       float64   `json:"area_m2"`
	CommittedAt  time.Time `json:"committed_at"`
}

// SourceQuery selects sources for ConsoleSources.
type SourceQuery struct {
	// Source and Target filter as in JobQuery.
	Source string
	Target string
	// History is how many generations to give per source: 0 for
	// DefaultHistory, at most MaxHistory.
	History int
	Cursor  string
	Limit   int
}

// DefaultHistory and MaxHistory bound SourceQuery.History.
const (
	DefaultHistory = 5
	MaxHistory     = 50
)

// Validate checks the target and clamps the limits.
func (q *SourceQuery) Validate() error {
	if q.Target != "" && !slices.Contains(Targets, q.Target) {
		return Permanentf("target %q: want one of %s", q.Target, strings.Join(Targets, ", "))
	}
	q.Limit = clampPage(q.Limit)
	switch {
	case q.History <= 0:
		q.History = DefaultHistory
	case q.History > MaxHistory:
		q.History = MaxHistory
	}
	return nil
}

// SourcePage is one page of sources.
type SourcePage struct {
	Sources []SourceSummary `json:"sources"`
	Next    string          `json:"next,omitempty"`
}

// SourceSummary is a source, its current generation and its latest
// generations (History, newest first).
type SourceSummary struct {
	SourceInfo
	History []Generation `json:"history"`
}

// ClaimInfo is a claim not yet settled.
type ClaimInfo struct {
	JobID  string `json:"job_id"`
	State  string `json:"state"` // in-flight or lease-expired
	Source string `json:"source"`
	Owner  string `json:"owner"`
	// LeaseUntil is when the holder's lease ends; LeaseLeftSeconds how
	// long that is from now by the database's clock (0 once ended).
	LeaseUntil       time.Time `json:"lease_until"`
	LeaseLeftSeconds float64   `json:"lease_left_seconds"`
	Attempts         int32     `json:"attempts"`
	LastError        string    `json:"last_error,omitempty"`
	ClaimedAt        time.Time `json:"claimed_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// Overview is the console's summary line.
type Overview struct {
	// Now is the database's clock.
	Now time.Time `json:"now"`
	// States counts jobs by console state.
	States map[string]int64 `json:"states"`
	Jobs   int64            `json:"jobs"`
	// Sources is the number of sources with a current generation.
	Sources int64 `json:"sources_current"`
	// LastReportRefresh is when a report assignment was last stored
	// (nil when none has been).
	LastReportRefresh *time.Time `json:"last_report_refresh,omitempty"`
}

// CauseHint says what an operator can do about a job that failed with
// cause c: the override the cause calls for (a source SRID, a policy of
// the route, an encoding), or how to run it again. A FAILED job runs
// again when its event is delivered again; a changed parameter makes a
// new job.
func CauseHint(c Cause) string {
	const again = " A fixed file uploaded again is a new version, and a new job."
	switch c {
	case CauseCRS:
		return "Give the CRS: the route option source-srid=EPSG (serve: --route PREFIX=TARGET?source-srid=N) " +
			"or geoingest ingest --source-srid N; or upload the file with its .prj." + again
	case CauseInvalidGeometry:
		return "Repair invalid geometries: the route option invalid=repair (geoingest ingest --invalid repair)." + again
	case CauseNullGeometry:
		return "Skip features with no geometry: the route option null-geometry=skip (geoingest ingest --null-geometry skip)." + again
	case CauseWrongType:
		return "Only polygons are written: skip other features with the route option wrong-type=skip (geoingest ingest --wrong-type skip)." + again
	case CauseIncompleteSet:
		return "Upload the missing parts of the shapefile, then deliver the event again (upload the .shp again)."
	case CauseEncoding:
		return "Give the attribute encoding: the route option encoding=NAME (geoingest ingest --encoding NAME), or a .cpg file." + again
	case CausePayloadMismatch:
		return "The job key collided with a committed job of different content: check the source's versioning before running it again."
	}
	return "Fix the file and upload it again (a new version is a new job); delivering the same event again re-runs this job."
}

// FailureHint is CauseHint for a failure recorded before its cause was
// (migration 0038), whose cause is read from its reason's words.
func FailureHint(reason string) string { return CauseHint(legacyCause(reason)) }

// legacyCause reads a recorded failure reason's cause from its words, as
// the hints did before the causes were recorded.
func legacyCause(reason string) Cause {
	r := strings.ToLower(reason)
	switch {
	case strings.Contains(r, "unknown crs"), strings.Contains(r, "outside longitude/latitude range"),
		strings.Contains(r, "is not a crs that postgis knows"):
		return CauseCRS
	case strings.Contains(r, InvalidPolicyFailed), legacyInvalidPolicyFailure(r):
		return CauseInvalidGeometry
	case strings.Contains(r, "null-geometry policy is fail"):
		return CauseNullGeometry
	case strings.Contains(r, "wrong-type policy is fail"), strings.Contains(r, "no polygonal features"):
		return CauseWrongType
	case strings.Contains(r, "gave up waiting"):
		return CauseIncompleteSet
	case strings.Contains(r, "encoding"):
		return CauseEncoding
	case strings.Contains(r, "payload mismatch"):
		return CausePayloadMismatch
	}
	return ""
}

// FormatCursor and ParseCursor make and read the opaque cursors of the
// console's pages: a time and the key of the last row of a page, as a
// JSON array in URL-safe base64 (any key, whatever its characters).
func FormatCursor(t time.Time, key ...string) string {
	raw, _ := json.Marshal(append([]string{t.UTC().Format(time.RFC3339Nano)}, key...))
	return base64.RawURLEncoding.EncodeToString(raw)
}

// ParseCursor reads a cursor of n keys made by FormatCursor. A cursor
// that is not one is a Permanent error.
func ParseCursor(c string, n int) (time.Time, []string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	var parts []string
	if err != nil || json.Unmarshal(raw, &parts) != nil || len(parts) != n+1 {
		return time.Time{}, nil, Permanentf("cursor %q: not one of this list's", c)
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return time.Time{}, nil, Permanentf("cursor %q: %v", c, err)
	}
	return t, parts[1:], nil
}

// String names a job for a log line.
func (j JobSummary) String() string {
	return fmt.Sprintf("%s %s %s", j.JobID, j.State, j.Source)
}

// InvalidPolicyFailed ends the reason of a job that the invalid policy
// "fail" refused, as "null-geometry policy is fail" and "wrong-type policy
// is fail" end theirs: FailureHint tells those apart from a file that
// does not parse (whose reader may also say "invalid geometry").
const InvalidPolicyFailed = "invalid policy is fail"

// legacyInvalidPolicyFailure recognises the invalid policy's refusal as
// recorded before it said so: "feature N: invalid geometry: " and one of
// PostGIS's ST_IsValidReason reasons.
func legacyInvalidPolicyFailure(r string) bool {
	_, reason, ok := strings.Cut(r, ": invalid geometry: ")
	if !ok {
		return false
	}
	for _, v := range []string{"self-intersection", "too few points", "hole lies outside shell", "holes are nested",
		"interior is disconnected", "nested shells", "duplicate rings", "ring is not closed"} {
		if strings.HasPrefix(reason, v) {
			return true
		}
	}
	return false
}
