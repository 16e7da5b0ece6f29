package chaos

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/faultproxy"
)

var (
	flagOutage    = flag.Duration("chaos.outage", 0, "how long each outage of the S3 server and of the SQS server lasts (default 8s, 30s with -chaos.long)")
	flagFaultRate = flag.Float64("chaos.fault-rate", 0.02, "probability of each fault kind per S3 download or SQS action (0: only the faults armed once each)")
)

// Serve's download timeout and AWS retry policy in the suite: short, so
// that a stall and an outage are met and got over within the chaos.
var faultServeArgs = []string{"--download-timeout", "3s", "--aws-max-attempts", "3", "--aws-max-backoff", "1s"}

// faults puts a fault proxy in front of the S3 server and one in front of
// the SQS server: the serves talk to S3 and SQS only through them (the
// suite's own uploads, deliveries and checks do not). During the chaos
// the proxies fault requests at random by rules, every fault kind is
// armed once at the start so that even a short run meets each, and each
// server has one outage.
type faults struct {
	s3, sqs   *faultproxy.Proxy
	outage    time.Duration
	rate      float64
	outageAt  map[string]time.Duration // "S3", "SQS": when the outage began
	outageErr error

	mu                sync.Mutex
	on                bool // the random faults are on (between start and stop)
	held              int  // steals in progress: the random faults pause
	s3Rules, sqsRules []faultproxy.Rule
}

func newFaults(t *testing.T, s3URL, sqsURL string, seed uint64, outage time.Duration) *faults {
	t.Helper()
	f := &faults{outage: outage, rate: *flagFaultRate, outageAt: map[string]time.Duration{}}
	var err error
	// A latency spike of 1.5 s: longer than a third of the visibility
	// timeout, the interval of its renewal.
	f.s3, err = faultproxy.New(s3URL, faultproxy.Options{Protocol: faultproxy.S3, Seed: seed ^ 0x53, Latency: 1500 * time.Millisecond})
	if err != nil {
		t.Fatalf("fault proxy for S3: %v", err)
	}
	t.Cleanup(f.s3.Close)
	f.sqs, err = faultproxy.New(sqsURL, faultproxy.Options{Protocol: faultproxy.SQS, Seed: seed ^ 0x5153, Latency: 1500 * time.Millisecond})
	if err != nil {
		t.Fatalf("fault proxy for SQS: %v", err)
	}
	t.Cleanup(f.sqs.Close)
	return f
}

// env points the serves at the proxies.
func (f *faults) env() []string {
	return []string{"AWS_ENDPOINT_URL_S3=" + f.s3.URL(), "AWS_ENDPOINT_URL_SQS=" + f.sqs.URL()}
}

// The operations that the S3 faults hit: the downloads. The SQS faults hit
// the acks (DeleteMessage), the visibility changes (renewals and
// give-backs: ChangeMessageVisibility) and the receives.
const (
	opGet    = "GetObject"
	opDelete = "DeleteMessage"
	opVis    = "ChangeMessageVisibility"
	opRecv   = "ReceiveMessage"
)

// start arms each fault kind once and turns the random faults on.
func (f *faults) start() {
	for _, k := range faultproxy.Kinds {
		f.s3.Arm(opGet, k)
	}
	// Three in a row outlast the SDK's three attempts: the application
	// sees the failure.
	for i := 0; i < 3; i++ {
		f.sqs.Arm(opDelete, faultproxy.Error500)
	}
	for i := 0; i < 3; i++ {
		f.sqs.Arm(opVis, faultproxy.SlowDown)
	}
	f.sqs.Arm(opDelete, faultproxy.Reset) // done upstream; the answer is lost
	f.sqs.Arm(opRecv, faultproxy.SlowDown)
	f.sqs.Arm(opRecv, faultproxy.Latency)
	if f.rate <= 0 {
		return
	}
	p := f.rate
	var s3Rules []faultproxy.Rule
	for _, k := range faultproxy.Kinds {
		rp := p
		if k == faultproxy.Stall {
			rp = p / 2 // each costs a download timeout
		}
		s3Rules = append(s3Rules, faultproxy.Rule{Op: opGet, Kind: k, P: rp})
	}
	sqsRules := []faultproxy.Rule{
		faultproxy.Rule{Op: opDelete, Kind: faultproxy.Error500, P: p, Burst: 3},
		faultproxy.Rule{Op: opDelete, Kind: faultproxy.SlowDown, P: p},
		faultproxy.Rule{Op: opDelete, Kind: faultproxy.Reset, P: p},
		faultproxy.Rule{Op: opVis, Kind: faultproxy.SlowDown, P: p, Burst: 3},
		faultproxy.Rule{Op: opVis, Kind: faultproxy.Error500, P: p},
		faultproxy.Rule{Op: opVis, Kind: faultproxy.Latency, P: p},
		faultproxy.Rule{Op: opRecv, Kind: faultproxy.SlowDown, P: p},
		faultproxy.Rule{Op: opRecv, Kind: faultproxy.Error500, P: p},
		faultproxy.Rule{Op: opRecv, Kind: faultproxy.Latency, P: p},
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.s3Rules, f.sqsRules, f.on = s3Rules, sqsRules, true
	f.apply()
}

// stop turns the random faults off (armed ones still fire).
func (f *faults) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = false
	f.apply()
}

// hold pauses the random faults until release: a steal needs a worker of
// another serve free to receive its extra copy while the victim writes,
// and the faults keep the workers busy (armed faults still fire).
func (f *faults) hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held++
	f.apply()
}

func (f *faults) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held--
	f.apply()
}

// apply gives the proxies their rules, or none. Called with f.mu held.
func (f *faults) apply() {
	if f.on && f.held == 0 {
		f.s3.SetRules(f.s3Rules...)
		f.sqs.SetRules(f.sqsRules...)
		return
	}
	f.s3.SetRules()
	f.sqs.SetRules()
}

// runFaults arms and turns on the faults at 5 % of the chaos, takes the
// S3 server away at outageAt[0] and the SQS server at outageAt[1] (15 % and
// 70 %; 35 % and 75 % in the long run, after its steals: the backlog an
// outage leaves behind delays the stealer's extra copy past the victim's
// commit), each for the outage length and never during a steal nor the
// PostgreSQL restart (an outage that these delay past the chaos's end
// still happens, late), and turns the random faults off when the chaos
// ends.
func (r *run) runFaults(ctx context.Context) {
	f := r.faults
	defer f.stop()
	sleepUntil := func(t time.Time) bool {
		// A time already past is kept, late, never skipped: a long steal
		// or the restart can hold pgMu past the next outage's time, and
		// the chaos can end meanwhile (a select with both ready picks at
		// random, which failed a run: "the chaos ended before the SQS
		// outage" after an S3 outage that began at 34 s of 30).
		if time.Until(t) <= 0 {
			return true
		}
		select {
		case <-time.After(time.Until(t)):
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !sleepUntil(r.at(0.05)) {
		f.outageErr = fmt.Errorf("the chaos ended before the faults began")
		return
	}
	f.start()
	for _, o := range []struct {
		name string
		at   float64
		p    *faultproxy.Proxy
	}{{"S3", r.cfg.outageAt[0], f.s3}, {"SQS", r.cfg.outageAt[1], f.sqs}} {
		if !sleepUntil(r.at(o.at)) {
			f.outageErr = fmt.Errorf("the chaos ended before the %s outage", o.name)
			return
		}
		r.pgMu.Lock() // no steal meanwhile: its thief could not receive
		f.outageAt[o.name] = time.Since(r.start)
		if err := o.p.Down(f.outage); err != nil {
			f.outageErr = err
		}
		o.p.Wait()
		r.pgMu.Unlock()
	}
	<-ctx.Done()
}

// report is the faults' lines of the chaos report: every fault by kind
// and operation, and the outages.
func (f *faults) report(p func(string, ...any), logCounts, lineCounts map[string]int) {
	byKind := map[faultproxy.Kind]int{}
	for _, px := range []*faultproxy.Proxy{f.s3, f.sqs} {
		for k, n := range px.KindCounts() {
			byKind[k] += n
		}
	}
	var kinds []string
	total := 0
	for _, k := range faultproxy.Kinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, byKind[k]))
		total += byKind[k]
	}
	p("faults:         %d injected by the fault proxies (random at %.3f per kind and request, and each kind armed once); by kind: %s",
		total, f.rate, strings.Join(kinds, ", "))
	p("                S3:  %s", f.s3)
	p("                SQS: %s", f.sqs)
	p("outages:        S3 %d (%s at %s), SQS %d (%s at %s): connections refused and open ones cut",
		f.s3.Outages(), f.outage, f.outageAt["S3"].Round(time.Second), f.sqs.Outages(), f.outage, f.outageAt["SQS"].Round(time.Second))
	seen := func(words ...string) int {
		n := 0
		for k, c := range logCounts {
			all := true
			for _, w := range words {
				all = all && strings.Contains(k, w)
			}
			if all {
				n += c
			}
		}
		return n
	}
	p("                what reached the serves past the SDK's retries: %d acks failed, %d visibility renewals failed, %d give-backs failed, %d receives failed; %d downloads stalled, %d cut short (log lines)",
		seen("WARN  ack failed"), seen("WARN  extend visibility"), seen("WARN  nack failed"), seen("WARN  receive failed"), lineCounts[errStalledText], lineCounts[errShortText])
}

// The serves' log texts of a stalled download and of one cut short
// (ingest/s3).
const (
	errStalledText = "download stalled"
	errShortText   = "download ended short of its length"
)

// check fails the test when a fault kind or an outage never happened.
func (f *faults) check(t *testing.T) {
	t.Helper()
	if f.outageErr != nil {
		t.Errorf("outages: %v", f.outageErr)
	}
	s3 := f.s3.Counts()
	for _, k := range faultproxy.Kinds {
		if s3[string(k)+" "+opGet] == 0 {
			t.Errorf("no %s fault on an S3 download", k)
		}
	}
	sq := f.sqs.Counts()
	for _, want := range []string{"500 " + opDelete, "reset " + opDelete, "slowdown " + opVis, "slowdown " + opRecv, "latency " + opRecv} {
		if sq[want] == 0 {
			t.Errorf("no %s fault on SQS", want)
		}
	}
	if f.s3.Outages() != 1 || f.sqs.Outages() != 1 {
		t.Errorf("outages: S3 %d, SQS %d; want one each", f.s3.Outages(), f.sqs.Outages())
	}
}
