package ingest

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are geoingest's Prometheus instruments. The rejection paths
// (claim-gate and write-gate duplicates, stolen leases) are counted so
// that an idempotency layer that never rejects anything shows up as such.
// A claim held under another worker's live lease is counted apart
// (claims{result="held"}): it is not a duplicate, the job is not done.
type Metrics struct {
	EventsReceived       prometheus.Counter
	EventsFiltered       *prometheus.CounterVec // reason
	Claims               *prometheus.CounterVec // result: won, duplicate, held
	WriteGate            *prometheus.CounterVec // result: written, pending, already_present, superseded, retired
	LeasesStolen         prometheus.Counter
	PayloadMismatches    prometheus.Counter
	JobsFailed           *prometheus.CounterVec // kind: permanent, transient, precondition
	DeadLettered         prometheus.Counter
	FeaturesWritten      prometheus.Counter
	Downloads            prometheus.Counter
	JobDuration          prometheus.Histogram
	VisibilityExtensions prometheus.Counter
	DiskFull             prometheus.Counter
	ReceiveFailures      prometheus.Counter
	// ReplicaWait and ReplicaWaitsFailed are the durable
	// acknowledgement's (durability.go, serve --ack-replicas): how long
	// a job's commit took to be flushed by enough standbys, and the
	// deliveries given back because it was not in time.
	ReplicaWait        prometheus.Histogram
	ReplicaWaitsFailed prometheus.Counter
}

// NewMetrics creates the instruments and registers them with reg, which
// may be nil (instruments that nobody scrapes).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		EventsReceived: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoingest_events_received_total", Help: "Bucket events received from the queue."}),
		EventsFiltered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoingest_events_filtered_total", Help: "Events dropped by the trigger gate, by reason."}, []string{"reason"}),
		Claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoingest_claims_total", Help: "Claim gate outcomes: won; duplicate (the job is committed: acked); held (another worker's live lease: not done, retried after it); reclaimed (this worker's own dead attempt's unreleased claim, taken back at once)."}, []string{"result"}),
		WriteGate: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoingest_write_gate_total", Help: "Write gate outcomes (written, pending, already_present, superseded, retired)."}, []string{"result"}),
		LeasesStolen: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoingest_leases_stolen_total", Help: "Commits that found their claim taken over by another worker."}),
		PayloadMismatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoingest_payload_mismatches_total", Help: "Write-gate rejections whose content hash differs from the ledger's."}),
		JobsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoingest_jobs_failed_total", Help: "Failed job attempts, by kind."}, []string{"kind"}),
		DeadLettered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoingest_messages_dead_lettered_total", Help: "Messages sent to the dead-letter queue."}),
		FeaturesWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoingest_features_written_total", Help: "Features written to feature tables."}),
		Downloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoingest_downloads_total", Help: "Objects downloaded (or local files copied) for a job."}),
		JobDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "geoingest_job_duration_seconds", Help: "Wall time of a job from claim to outcome.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12)}),
		VisibilityExtensions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoingest_visibility_extensions_total", Help: "Queue visibility timeouts extended for running jobs."}),
		ReceiveFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoingest_receive_failures_total", Help: "Receives from the queue (or scans of the inbox) that failed; retried at most 5 s apart."}),
		DiskFull: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoingest_disk_full_total", Help: "Job attempts that failed because the work directory's file system was full (ENOSPC, EDQUOT) while downloading or extracting: transient, retried."}),
		ReplicaWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "geoingest_ack_replicas_wait_seconds", Help: "With --ack-replicas: the wait, after a job's commit and before its ack, until enough standbys had flushed it.",
			Buckets: prometheus.ExponentialBuckets(0.001, 3, 11)}),
		ReplicaWaitsFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoingest_ack_replicas_not_confirmed_total", Help: "With --ack-replicas: deliveries whose commit was not seen on enough standbys in time (or whose session died waiting): not acked, given back for retry."}),
	}
	for _, r := range []string{"won", "duplicate", "held"} {
		m.Claims.WithLabelValues(r)
	}
	for _, r := range []string{"written", "pending", "already_present", "superseded", "retired"} {
		m.WriteGate.WithLabelValues(r)
	}
	for _, k := range []string{"permanent", "transient", "precondition"} {
		m.JobsFailed.WithLabelValues(k)
	}
	if reg != nil {
		reg.MustRegister(m.EventsReceived, m.EventsFiltered, m.Claims, m.WriteGate, m.LeasesStolen,
			m.PayloadMismatches, m.JobsFailed, m.DeadLettered, m.FeaturesWritten, m.Downloads,
			m.JobDuration, m.VisibilityExtensions, m.DiskFull, m.ReceiveFailures, m.ReplicaWait, m.ReplicaWaitsFailed)
	}
	return m
}
