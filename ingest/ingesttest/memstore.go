package ingesttest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/geoingest/geoingest/geomio/crs"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/prepare"
)

// MemStore is an in-memory ingest.JobStore, with the ledger reads the
// conformance suites check it by (CurrentGeneration, Snapshot), so that
// the Service, the Consumer and what runs on them get unit tests with no
// database. It passes ClaimsSuite and WriteGateSuite, as postgis.Store
// does; PostGIS stays the reference for everything else.
//
// What it keeps of the contracts: the claim gate (one worker at a time
// under a lease, by this process's clock; a FAILED or expired claim is
// taken over, a COMMITTED one never), and the write gate (one ledger
// entry per job, a duplicate AlreadyPresent or a payload mismatch, the
// versions of a source applied in their order, an older one Superseded,
// a newer removal Retired), under one mutex. The features are prepared by
// ingest/prepare under the job's policies, as the PostGIS write gate
// prepares them, and only their count, area and checksum are kept.
//
// What it does not do: guards (every version is applied, none is held
// pending), the quarantine, typed schemas, report cells, and features in
// a CRS other than EPSG:4326 (refused, Permanent: it has no
// transformation). The zero value is not usable: NewMemStore.
type MemStore struct {
	mu      sync.Mutex
	now     func() time.Time
	claims  map[string]*memClaim
	jobs    map[string]*memJob
	sources map[memSourceKey]*memSource
	custom  map[string]int // custom CRS definitions' SRIDs
	// failures and causes are each Fail's reason and cause by job id.
	failures map[string]string
	causes   map[string]ingest.Cause
}

type memClaim struct {
	state      string // CLAIMED, COMMITTED, FAILED
	owner      string
	leaseUntil time.Time
	attempts   int32
}

type memJob struct {
	id, status, contentHash, target string
	src                             memSourceKey
	committedAt                     time.Time
	features                        int64
	area                            float64
	checksum                        string
}

type memSourceKey struct{ bucket, key, target, version string }

type memSource struct {
	current string // job id, "" for none
	order   string // of the newest version applied
}

var _ ingest.JobStore = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{now: time.Now, claims: map[string]*memClaim{}, jobs: map[string]*memJob{},
		sources: map[memSourceKey]*memSource{}, custom: map[string]int{}, failures: map[string]string{}, causes: map[string]ingest.Cause{}}
}

// Claim implements ingest.Claims.
func (m *MemStore) Claim(_ context.Context, job ingest.Job, owner string, lease time.Duration) (ingest.ClaimStatus, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.claim(job.ID, owner, lease), nil
}

func (m *MemStore) claim(id, owner string, lease time.Duration) ingest.ClaimStatus {
	now := m.now()
	c := m.claims[id]
	switch {
	case c == nil:
		c = &memClaim{}
		m.claims[id] = c
	case c.state == "COMMITTED":
		return ingest.ClaimStatus{Result: ingest.ClaimCommitted, Attempt: c.attempts}
	case c.state == "CLAIMED" && c.leaseUntil.After(now):
		return ingest.ClaimStatus{Result: ingest.ClaimHeld, Owner: c.owner, LeaseUntil: c.leaseUntil,
			LeaseLeft: c.leaseUntil.Sub(now), Attempt: c.attempts}
	}
	c.state, c.owner, c.leaseUntil = "CLAIMED", owner, now.Add(lease)
	c.attempts++
	return ingest.ClaimStatus{Result: ingest.ClaimWon, Attempt: c.attempts}
}

// ClaimBatch implements ingest.Claims.
func (m *MemStore) ClaimBatch(_ context.Context, jobs []ingest.Job, owner string, lease time.Duration) ([]ingest.ClaimResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ingest.ClaimResult, len(jobs))
	for i, j := range jobs {
		st := m.claim(j.ID, owner, lease)
		out[i] = st.Result
	}
	return out, nil
}

// Heartbeat implements ingest.Claims.
func (m *MemStore) Heartbeat(_ context.Context, jobID, owner string, lease time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.claims[jobID]
	if c == nil || c.state != "CLAIMED" || c.owner != owner {
		return false, nil
	}
	c.leaseUntil = m.now().Add(lease)
	return true, nil
}

// Release implements ingest.Claims: the claim's lease ends now.
func (m *MemStore) Release(_ context.Context, jobID, owner, _ string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.claims[jobID]; c != nil && c.state == "CLAIMED" && c.owner == owner {
		c.leaseUntil = time.Time{}
	}
	return nil
}

// Fail implements ingest.Claims.
func (m *MemStore) Fail(_ context.Context, jobID, reason string, cause ingest.Cause) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.claims[jobID]
	if c == nil {
		c = &memClaim{}
		m.claims[jobID] = c
	}
	if c.state == "COMMITTED" {
		return nil
	}
	c.state = "FAILED"
	m.failures[jobID] = reason
	m.causes[jobID] = cause
	return nil
}

// Cause returns the cause Fail recorded for jobID.
func (m *MemStore) Cause(jobID string) ingest.Cause {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.causes[jobID]
}

// Failure returns the reason Fail recorded for jobID ("" when none).
func (m *MemStore) Failure(jobID string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failures[jobID]
}

// ClaimState returns jobID's claim state (CLAIMED, COMMITTED, FAILED; ""
// when it has none).
func (m *MemStore) ClaimState(jobID string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.claims[jobID]; c != nil {
		return c.state
	}
	return ""
}

// RegisterCRS implements ingest.JobStore: c's EPSG code, else an SRID
// from 990000 for its definition (the same definition, the same SRID).
func (m *MemStore) RegisterCRS(c crs.CRS) (int, error) {
	if c.EPSG != 0 && c.Method != crs.Custom {
		return c.EPSG, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if srid, ok := m.custom[c.Definition]; ok {
		return srid, nil
	}
	srid := 990000 + len(m.custom)
	m.custom[c.Definition] = srid
	return srid, nil
}

// srcKey is the source job writes.
func srcKey(job ingest.Job) memSourceKey {
	return memSourceKey{job.Source.Bucket, job.Source.Key, job.Params.Target, job.Params.PipelineVersion}
}

// open is the write gate's first step: a duplicate (AlreadyPresent, or a
// payload mismatch) or nil to go on. m.mu is held.
func (m *MemStore) open(job ingest.Job, contentHash string) (*ingest.WriteResult, error) {
	j := m.jobs[job.ID]
	if j == nil {
		return nil, nil
	}
	if j.contentHash != contentHash {
		return nil, ingest.PermanentCause(ingest.CausePayloadMismatch, "payload mismatch: job %s is in the ledger with content %s, this delivery's is %s", job.ID, j.contentHash, contentHash)
	}
	return &ingest.WriteResult{Outcome: ingest.AlreadyPresent}, nil
}

// commit records j in the ledger and marks its claim COMMITTED. m.mu is
// held.
func (m *MemStore) commit(j *memJob) {
	j.committedAt = m.now()
	m.jobs[j.id] = j
	c := m.claims[j.id]
	if c == nil {
		c = &memClaim{}
		m.claims[j.id] = c
	}
	c.state = "COMMITTED"
}

// Write implements ingest.WriteGate. The features are read and prepared
// before the gate's lock is taken, as the PostGIS gate reads them before
// its commit; a read error commits nothing.
func (m *MemStore) Write(ctx context.Context, job ingest.Job, owner string, r ingest.LayerReader, in ingest.Fetched) (ingest.WriteResult, error) {
	m.mu.Lock()
	dup, err := m.open(job, in.ContentHash)
	m.mu.Unlock()
	if dup != nil || err != nil {
		return ingest.WriteResult{Outcome: dupOutcome(dup)}, err
	}
	n, area, sum, err := m.measure(ctx, r, job.Params)
	if err != nil {
		return ingest.WriteResult{}, err
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if dup, err := m.open(job, in.ContentHash); dup != nil || err != nil { // a concurrent delivery won
		return ingest.WriteResult{Outcome: dupOutcome(dup)}, err
	}
	k := srcKey(job)
	j := &memJob{id: job.ID, contentHash: in.ContentHash, target: job.Params.Target, src: k}
	s := m.sources[k]
	if s == nil {
		s = &memSource{}
		m.sources[k] = s
	}
	if s.order != "" && ingest.CompareOrder(job.Source.Order, s.order) < 0 {
		j.status = "superseded"
		m.commit(j)
		return ingest.WriteResult{Outcome: ingest.Superseded}, nil
	}
	replaced := s.current
	if old := m.jobs[replaced]; old != nil {
		old.status = "replaced"
	}
	j.status, j.features, j.area, j.checksum = "current", n, area, sum
	s.current, s.order = job.ID, job.Source.Order
	m.commit(j)
	return ingest.WriteResult{Outcome: ingest.Written, Features: n, AreaM2: area, Replaced: replaced}, nil
}

func dupOutcome(dup *ingest.WriteResult) ingest.Outcome {
	if dup == nil {
		return ""
	}
	return dup.Outcome
}

// measure prepares r's features under p's policies (ingest/prepare) and
// returns their count, area and checksum.
func (m *MemStore) measure(ctx context.Context, r ingest.LayerReader, p ingest.Params) (int64, float64, string, error) {
	known := func(_ context.Context, srid int) (bool, error) { return srid == 4326, nil }
	fs := prepare.New(ctx, r, p, known)
	var (
		n    int64
		area float64
		sum  [32]byte
	)
	enc := func(out []byte, f *prepare.Feature, pr *prepare.Prepared) []byte {
		h := sha256.New()
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00", f.Index, f.Layer, f.Props)
		h.Write(pr.EWKB)
		out = h.Sum(out)
		return binary.LittleEndian.AppendUint64(out, math.Float64bits(pr.Area))
	}
	err := fs.Run(prepare.Direct, enc, func(out []byte) error {
		for ; len(out) >= 40; out = out[40:] {
			n++
			for i := range sum {
				sum[i] ^= out[i]
			}
			area += math.Float64frombits(binary.LittleEndian.Uint64(out[32:40]))
		}
		return nil
	})
	if err == nil && fs.Switched() {
		err = ingest.Permanentf("a feature in a CRS other than EPSG:4326: the in-memory store does not transform")
	}
	if err != nil {
		return 0, 0, "", err
	}
	return n, area, hex.EncodeToString(sum[:]), nil
}

// Retire implements ingest.WriteGate.
func (m *MemStore) Retire(_ context.Context, job ingest.Job, _ string) (ingest.WriteResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if dup, err := m.open(job, "delete"); dup != nil || err != nil {
		return ingest.WriteResult{Outcome: dupOutcome(dup)}, err
	}
	k := srcKey(job)
	j := &memJob{id: job.ID, contentHash: "delete", target: job.Params.Target, src: k}
	s := m.sources[k]
	if s == nil {
		s = &memSource{}
		m.sources[k] = s
	}
	if s.order != "" && ingest.CompareOrder(job.Source.Order, s.order) < 0 {
		j.status = "superseded"
		m.commit(j)
		return ingest.WriteResult{Outcome: ingest.Superseded}, nil
	}
	retired := s.current
	if old := m.jobs[retired]; old != nil {
		old.status = "retired"
	}
	j.status = "delete"
	s.current, s.order = "", job.Source.Order
	m.commit(j)
	return ingest.WriteResult{Outcome: ingest.Retired, Replaced: retired}, nil
}

// RecordSuperseded implements ingest.WriteGate.
func (m *MemStore) RecordSuperseded(_ context.Context, job ingest.Job, _ string) (ingest.WriteResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if dup, err := m.open(job, "superseded"); dup != nil || err != nil {
		return ingest.WriteResult{Outcome: dupOutcome(dup)}, err
	}
	m.commit(&memJob{id: job.ID, contentHash: "superseded", status: "superseded", target: job.Params.Target, src: srcKey(job)})
	return ingest.WriteResult{Outcome: ingest.Superseded}, nil
}

// CurrentGeneration implements ingest.CurrentGenerations.
func (m *MemStore) CurrentGeneration(_ context.Context, bucket, key, target, pipelineVersion string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sources[memSourceKey{bucket, key, target, pipelineVersion}]; s != nil {
		return s.current, nil
	}
	return "", nil
}

// Snapshot implements ingest.Snapshots.
func (m *MemStore) Snapshot(_ context.Context, jobID string) (ingest.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[jobID]
	if j == nil {
		return ingest.Snapshot{}, &ingest.Error{Kind: ingest.Permanent, Err: fmt.Errorf("%w: %s", ingest.ErrJobNotFound, jobID)}
	}
	rows := func(j *memJob) ingest.FeatureSum {
		if j == nil || j.status != "current" {
			return ingest.FeatureSum{}
		}
		return ingest.FeatureSum{JobID: j.id, N: j.features, AreaM2: j.area, Checksum: j.checksum}
	}
	snap := ingest.Snapshot{JobID: j.id, Status: j.status, CommittedAt: j.committedAt, FeatureCount: j.features,
		TotalAreaM2: j.area, ContentHash: j.contentHash, FeaturesChecksum: j.checksum, Target: j.target,
		Features: rows(j)}
	if c := m.claims[jobID]; c != nil {
		snap.ClaimState = c.state
	}
	if s := m.sources[j.src]; s != nil {
		snap.SourceCurrent = s.current
		snap.SourceFeatures = rows(m.jobs[s.current])
	}
	return snap, nil
}
