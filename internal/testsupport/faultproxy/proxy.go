// Package faultproxy is an HTTP proxy that sits in front of an S3 or SQS
// server in the tests (the chaos suite) and makes it misbehave on purpose,
// the ways a real object store or queue does: 500 and 503 SlowDown
// answers, connection resets and truncated bodies mid-download, a stalled
// stream, latency spikes, failed acks and visibility changes, and whole
// outages (connection refused).
//
// Faults are chosen per request by rules (an operation, a fault kind and a
// probability, optionally a burst of consecutive requests), or armed to
// hit the next request of an operation; every fault is counted by kind
// and operation. The proxy forwards everything else unchanged, the Host
// header included, so that SigV4 signatures made for the proxy's address
// still verify upstream.
package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Protocol says how the upstream speaks: it decides how operations are
// named and the shape of the error answers.
type Protocol int

const (
	// S3 is the S3 REST protocol: XML error bodies; operations named from
	// the method and path (GetObject, HeadObject, PutObject, ListObjects,
	// ListObjectVersions, ...).
	S3 Protocol = iota
	// SQS is the SQS protocol: the operation is the X-Amz-Target header's
	// action (AWS JSON 1.0, what aws-sdk-go-v2 speaks) or the Action form
	// field (the query protocol); errors are JSON bodies with __type and
	// the x-amzn-query-error header.
	SQS
	// Azure is Azure Storage's REST protocol, Blob and Queue services
	// (path-style: /ACCOUNT/CONTAINER/BLOB, /ACCOUNT/QUEUE/messages):
	// operations are named as Azure names them (GetMessages,
	// DeleteMessage, UpdateMessage, PutMessage, GetQueueProperties,
	// GetBlob, GetBlobProperties, PutBlob, ListBlobs, ...); errors are
	// XML bodies with the x-ms-error-code header (InternalError,
	// ServerBusy), which the Azure SDK retries.
	Azure
)

// Options configure a Proxy.
type Options struct {
	Protocol Protocol
	// Seed makes the random choices repeatable; 0 picks one.
	Seed uint64
	// Latency is the delay of a Latency fault (default 2s).
	Latency time.Duration
	// StallMax is the longest a Stall fault holds its connection when the
	// client does not give up first (default 10 minutes).
	StallMax time.Duration
}

// Proxy is a running fault proxy. Its zero value is not usable: New.
type Proxy struct {
	upstream string // scheme://host:port
	opts     Options
	addr     string
	tr       *http.Transport

	mu      sync.Mutex
	rng     *rand.Rand
	rules   []Rule
	armed   []Rule           // fire once each, on the next request of their op
	bursts  map[string]burst // op -> the fault still to repeat
	counts  map[string]int   // "kind op"
	outages int
	srv     *http.Server
	conns   map[net.Conn]struct{} // hijacked connections (closed by Down and Close)
	down    bool
	closed  bool
	downWG  sync.WaitGroup
}

type burst struct {
	kind Kind
	left int
}

// New starts a proxy on a free loopback port forwarding to upstream (a
// base URL such as http://127.0.0.1:7070).
func New(upstream string, opts Options) (*Proxy, error) {
	if opts.Latency <= 0 {
		opts.Latency = 2 * time.Second
	}
	if opts.StallMax <= 0 {
		opts.StallMax = 10 * time.Minute
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	p := &Proxy{upstream: upstream, opts: opts, rng: rand.New(rand.NewPCG(seed, 7)),
		bursts: map[string]burst{}, counts: map[string]int{}, conns: map[net.Conn]struct{}{},
		tr: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = l.Addr().String()
	p.serve(l)
	return p, nil
}

// URL is the proxy's base URL: give it to the client as its endpoint.
func (p *Proxy) URL() string { return "http://" + p.addr }

// SetRules replaces the rules (nil: no random faults).
func (p *Proxy) SetRules(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append([]Rule(nil), rules...)
}

// Arm makes the next request of op ("" for any) suffer kind, whatever the
// rules say. Armed faults fire in the order they were armed.
func (p *Proxy) Arm(op string, kind Kind) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = append(p.armed, Rule{Op: op, Kind: kind, P: 1})
}

// Armed is how many armed faults have not fired yet.
func (p *Proxy) Armed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.armed)
}

// Counts returns how many times each fault fired, keyed "KIND OP" (for
// example "slowdown GetObject"), and Outages how many outages there were.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// KindCounts sums Counts by kind.
func (p *Proxy) KindCounts() map[Kind]int {
	out := map[Kind]int{}
	for k, v := range p.Counts() {
		var kind, op string
		fmt.Sscan(k, &kind, &op)
		out[Kind(kind)] += v
	}
	return out
}

// Outages is how many outages (Down) have begun.
func (p *Proxy) Outages() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.outages
}

// String lists the counts, sorted, on one line.
func (p *Proxy) String() string {
	c := p.Counts()
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, c[k])
	}
	if b.Len() == 0 {
		b.WriteString("none")
	}
	return b.String()
}

// Down takes the server away for d: the proxy stops listening (a client
// gets connection refused) and cuts every open connection, then listens
// again on the same address. It returns at once; Wait for the end.
func (p *Proxy) Down(d time.Duration) error {
	p.mu.Lock()
	if p.down || p.closed {
		p.mu.Unlock()
		return errors.New("faultproxy: already down or closed")
	}
	p.down = true
	p.outages++
	srv := p.srv
	p.closeHijackedLocked()
	p.downWG.Add(1)
	p.mu.Unlock()
	_ = srv.Close()
	go func() {
		defer p.downWG.Done()
		time.Sleep(d)
		for deadline := time.Now().Add(10 * time.Second); ; {
			l, err := net.Listen("tcp", p.addr)
			if err == nil {
				p.mu.Lock()
				p.down = false
				if p.closed {
					p.mu.Unlock()
					l.Close()
					return
				}
				p.serve(l)
				p.mu.Unlock()
				return
			}
			if time.Now().After(deadline) {
				panic(fmt.Sprintf("faultproxy: cannot listen on %s again after an outage: %v", p.addr, err))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return nil
}

// Wait returns when no outage is in progress.
func (p *Proxy) Wait() { p.downWG.Wait() }

// IsDown reports whether an outage is in progress.
func (p *Proxy) IsDown() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down
}

// Close stops the proxy for good.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	srv := p.srv
	p.closeHijackedLocked()
	p.mu.Unlock()
	_ = srv.Close()
	p.downWG.Wait()
	p.tr.CloseIdleConnections()
}

// serve starts an http.Server on l. Called with p.mu held, or before the
// proxy is shared.
func (p *Proxy) serve(l net.Listener) {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	p.srv = srv
	go func() { _ = srv.Serve(l) }()
}

func (p *Proxy) closeHijackedLocked() {
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down || p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pick chooses the fault for one request of op (None for none) and counts
// it.
func (p *Proxy) pick(op string) Kind {
	p.mu.Lock()
	defer p.mu.Unlock()
	kind := None
	for i, r := range p.armed {
		if r.Op == "" || r.Op == op {
			kind = r.Kind
			p.armed = append(p.armed[:i], p.armed[i+1:]...)
			break
		}
	}
	if kind == None {
		if b, ok := p.bursts[op]; ok {
			kind = b.kind
			if b.left--; b.left <= 0 {
				delete(p.bursts, op)
			} else {
				p.bursts[op] = b
			}
		}
	}
	if kind == None {
		for _, r := range p.rules {
			if (r.Op == "" || r.Op == op) && p.rng.Float64() < r.P {
				kind = r.Kind
				if r.Burst > 1 {
					p.bursts[op] = burst{kind: r.Kind, left: r.Burst - 1}
				}
				break
			}
		}
	}
	if kind != None {
		p.counts[string(kind)+" "+op]++
	}
	return kind
}

// ServeHTTP forwards one request, or answers it with a fault.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	op := p.operation(r, body)
	kind := p.pick(op)
	switch kind {
	case Error500, SlowDown:
		p.writeError(w, kind, op)
		return
	case Latency:
		select {
		case <-time.After(p.opts.Latency):
		case <-r.Context().Done():
			return
		}
	}
	resp, err := p.forward(r, body)
	if err != nil {
		http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	switch kind {
	case Reset, Truncate, Stall:
		p.misdeliver(w, r, resp, kind)
		return
	}
	h := w.Header()
	for k, vs := range resp.Header {
		if hopByHop[http.CanonicalHeaderKey(k)] {
			continue
		}
		h[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(flushWriter{w}, resp.Body)
}

// forward sends the request upstream, Host header unchanged.
func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		if hopByHop[http.CanonicalHeaderKey(k)] {
			continue
		}
		out.Header[k] = vs
	}
	out.Host = r.Host
	out.ContentLength = int64(len(body))
	return p.tr.RoundTrip(out)
}

// hopByHop are the headers a proxy does not pass on.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	_ = http.NewResponseController(f.w).Flush()
	return n, err
}

// misdeliver sends upstream's answer wrong: its status and headers with
// the full Content-Length, then half the body, then a reset (RST), a
// clean close (a truncated body), or nothing at all until the client
// gives up (a stall). An answer without a body (an SQS action, an Azure
// DeleteMessage or UpdateMessage) is not sent at all: a Reset then cuts the
// connection after upstream has acted,
// so the client cannot know whether it did.
func (p *Proxy) misdeliver(w http.ResponseWriter, r *http.Request, resp *http.Response, kind Kind) {
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if !p.track(conn) {
		conn.Close()
		return
	}
	defer p.untrack(conn)
	defer conn.Close()
	half := len(data) / 2
	if kind == Reset && (p.opts.Protocol == SQS || (p.opts.Protocol == Azure && len(data) == 0)) {
		half = -1 // nothing at all: the action was done, the answer is lost
	}
	if half >= 0 {
		var head bytes.Buffer
		fmt.Fprintf(&head, "HTTP/1.1 %d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
		for k, vs := range resp.Header {
			if hopByHop[http.CanonicalHeaderKey(k)] || http.CanonicalHeaderKey(k) == "Content-Length" {
				continue
			}
			for _, v := range vs {
				fmt.Fprintf(&head, "%s: %s\r\n", k, v)
			}
		}
		fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", len(data))
		head.Write(data[:half])
		if _, err := conn.Write(head.Bytes()); err != nil {
			return
		}
	}
	switch kind {
	case Reset:
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // Close sends RST, not FIN
		}
	case Truncate:
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	case Stall:
		// Hold the connection until the client closes it (a read
		// returns), the proxy goes down, or StallMax.
		gone := make(chan struct{})
		go func() {
			buf := make([]byte, 512)
			for {
				if _, err := conn.Read(buf); err != nil {
					close(gone)
					return
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.StallMax)
		defer cancel()
		select {
		case <-gone:
		case <-ctx.Done():
		}
	}
}
