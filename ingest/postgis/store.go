package postgis

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the ingest.Store of PostGIS, every role of it, one file each:
// the claims (claims.go, claimbatch.go), the write gate (writegate.go,
// copyrows.go), the CRS registry (crs.go), the reports (report*.go,
// admincheck.go) and the ledger's reads (jobs.go, replay.go; the read
// model of jobs, Console, with verify.go).
// All SQL it runs is compiled by sqlc from internal/db/query.
type Store struct {
	// Console is the one read model of jobs (ingest.ConsoleReader) on
	// the Store's pool: the Ledger's reads of jobs and sources, and
	// verify's (verify.go).
	*Console

	pool    *pgxpool.Pool
	q       *db.Queries
	log     *slog.Logger
	metrics *ingest.Metrics

	sridMu    sync.Mutex
	sridKnown map[int]bool
	customCRS sync.Map // definition hash -> SRID of registered custom CRSs (crs.go)

	guardNanos atomic.Int64 // time spent in the write gate's guards (pending.go), for BenchmarkGuardCost

	// OwnPartitionBytes is the input size (bytes) from which a job's
	// features get a partition of their own, indexed once after the COPY
	// (and folded into the shared one later by the compactor); smaller
	// jobs share the target's shared partition. 0 means
	// DefaultOwnPartitionBytes. Set it before the first Write.
	OwnPartitionBytes int64

	// FullReplace makes every new version of a source write all its
	// features and delete the replaced generation's, as before migration
	// 0026, instead of writing only what changed (diffwrite.go): for
	// benchmarks and as a way back. Set it before the first Write.
	FullReplace bool

	// HistoryCopy makes a generation retired whole always copied into
	// feature_history, as before migration 0046, never kept as its
	// detached partition (retirewhole.go): for benchmarks and as a way
	// back.
	HistoryCopy bool
	// NoPrefilter turns off the raw-bytes prefilter of a new version
	// (prefilter.go: the features whose bytes are a current row's are
	// neither parsed nor sent): every version is read whole, as before
	// migration 0049. For benchmarks and as a way back; set it before the
	// first Write.
	NoPrefilter bool
	// DiffRewriteAbove is the fraction of a new version's rows that are
	// added or changed above which a version with a table of its own is
	// written whole into it, the unchanged rows copied on the server,
	// rather than changed in place in the old generation's table
	// (diffwrite.go); 0 is DefaultDiffRewriteAbove, a negative value
	// always rewrites.
	DiffRewriteAbove float64

	// AttachWait bounds how long a large job's commit waits for a moment
	// when no other transaction holds its target table (attach.go); then
	// the job fails, transiently. 0 means DefaultAttachWait.
	AttachWait time.Duration

	// NoClientReportCells turns off the report cells computed by the
	// writer (reportcells.go): every refresh then computes them in SQL.
	// For comparisons and benchmarks; set it before the first Write.
	NoClientReportCells bool

	cells clientCells

	// replicas is the durable acknowledgement's wait (RequireReplicas,
	// replicawait.go); Replicas 0: off.
	replicas ingest.ReplicaWait

	// hashes is whether the server's match hashes are the writer's
	// (hashprobe.go): hashesUnknown until asked.
	hashes atomic.Int32
	// prefilterOff is set when a prefiltered version's two reads
	// disagreed (prefilter.go): every version is read whole from then on.
	prefilterOff  atomic.Bool
	prefilterKept atomic.Int64 // features kept by the prefilter, for tests
}

// Store implements ingest.Store.
var _ ingest.Store = (*Store)(nil)

// NewStore returns a Store on pool. metrics and log may be nil.
func NewStore(pool *pgxpool.Pool, metrics *ingest.Metrics, log *slog.Logger) *Store {
	if metrics == nil {
		metrics = ingest.NewMetrics(nil)
	}
	if log == nil {
		log = slog.Default()
	}
	q := db.New(pool)
	return &Store{Console: &Console{q: q}, pool: pool, q: q, log: log, metrics: metrics, sridKnown: map[int]bool{}}
}
