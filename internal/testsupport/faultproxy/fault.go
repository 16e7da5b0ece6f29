package faultproxy

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Kind is a fault.
type Kind string

const (
	// None is no fault: the request is forwarded.
	None Kind = ""
	// Error500 answers 500 without forwarding: S3's InternalError, SQS's
	// InternalError.
	Error500 Kind = "500"
	// SlowDown answers 503 without forwarding: S3's SlowDown, SQS's
	// RequestThrottled. The AWS SDK retries both (a 5xx, and a throttling
	// code).
	SlowDown Kind = "slowdown"
	// Reset forwards the request, sends the answer's headers and half its
	// body, then resets the connection (RST). An SQS answer is not sent at
	// all: the action was done upstream, and the client sees a reset.
	Reset Kind = "reset"
	// Truncate forwards the request, sends the headers with the full
	// Content-Length and half the body, then closes the connection
	// cleanly: fewer bytes than promised.
	Truncate Kind = "truncate"
	// Stall forwards the request, sends the headers and half the body,
	// then sends nothing more until the client gives up (or StallMax).
	Stall Kind = "stall"
	// Latency waits Options.Latency, then forwards the request normally.
	Latency Kind = "latency"
)

// Kinds is every fault kind, in a fixed order.
var Kinds = []Kind{Error500, SlowDown, Reset, Truncate, Stall, Latency}

// Rule makes requests of an operation suffer a fault at random.
type Rule struct {
	// Op is the operation ("GetObject", "DeleteMessage", ...); "" for any.
	Op   string
	Kind Kind
	// P is the probability that a request of Op suffers Kind (rules are
	// tried in order; the first that fires wins).
	P float64
	// Burst, when above 1, makes the fault repeat on this many
	// consecutive requests of the same operation once it fires: enough to
	// outlast the client's own retries, so that the failure reaches the
	// application.
	Burst int
}

// operation names the request's operation.
func (p *Proxy) operation(r *http.Request, body []byte) string {
	switch p.opts.Protocol {
	case SQS:
		return sqsOperation(r, body)
	case Azure:
		return azureOperation(r)
	}
	return s3Operation(r)
}

// azureOperation names an Azure Storage request (path-style addressing:
// /ACCOUNT/QUEUE/messages[/ID] for the Queue service,
// /ACCOUNT/CONTAINER/BLOB for the Blob service) from its method, path
// and query.
func azureOperation(r *http.Request) string {
	parts := strings.SplitN(strings.Trim(r.URL.Path, "/"), "/", 3) // account, queue or container, rest
	q := r.URL.Query()
	rest := ""
	if len(parts) == 3 {
		rest = parts[2]
	}
	switch {
	case rest == "messages" && r.Method == http.MethodGet:
		if q.Get("peekonly") == "true" {
			return "PeekMessages"
		}
		return "GetMessages"
	case rest == "messages" && r.Method == http.MethodPost:
		return "PutMessage"
	case rest == "messages" && r.Method == http.MethodDelete:
		return "ClearMessages"
	case strings.HasPrefix(rest, "messages/") && r.Method == http.MethodDelete:
		return "DeleteMessage"
	case strings.HasPrefix(rest, "messages/") && r.Method == http.MethodPut:
		return "UpdateMessage"
	case len(parts) == 2 && q.Get("comp") == "metadata":
		return "GetQueueProperties"
	case len(parts) == 2 && q.Get("comp") == "list" && q.Get("restype") == "container":
		return "ListBlobs"
	case len(parts) == 2 && q.Get("restype") == "container" && r.Method == http.MethodGet:
		return "GetContainerProperties"
	case rest != "" && r.Method == http.MethodGet && q.Get("comp") == "":
		return "GetBlob"
	case rest != "" && r.Method == http.MethodHead:
		return "GetBlobProperties"
	case rest != "" && r.Method == http.MethodPut && q.Get("comp") == "":
		return "PutBlob"
	case rest != "" && r.Method == http.MethodDelete:
		return "DeleteBlob"
	}
	return r.Method
}

// sqsOperation is the action of an SQS request: the X-Amz-Target header
// of the JSON protocol ("AmazonSQS.DeleteMessage"), else the Action field
// of the query protocol's form.
func sqsOperation(r *http.Request, body []byte) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		if i := strings.LastIndexByte(t, '.'); i >= 0 {
			return t[i+1:]
		}
		return t
	}
	if a := r.URL.Query().Get("Action"); a != "" {
		return a
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if v, err := url.ParseQuery(string(body)); err == nil && v.Get("Action") != "" {
			return v.Get("Action")
		}
	}
	return r.Method
}

// s3Operation names an S3 request (path-style addressing) from its method,
// path and query.
func s3Operation(r *http.Request) string {
	path := strings.Trim(r.URL.Path, "/")
	object := strings.Contains(path, "/")
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && object:
		return "GetObject"
	case r.Method == http.MethodHead && object:
		return "HeadObject"
	case r.Method == http.MethodPut && object:
		return "PutObject"
	case r.Method == http.MethodDelete && object:
		return "DeleteObject"
	case r.Method == http.MethodGet && path != "" && q.Has("versions"):
		return "ListObjectVersions"
	case r.Method == http.MethodGet && path != "":
		return "ListObjects"
	case r.Method == http.MethodHead && path != "":
		return "HeadBucket"
	}
	return r.Method
}

// writeError answers with the error of kind, in the protocol's shape.
func (p *Proxy) writeError(w http.ResponseWriter, kind Kind, op string) {
	status, code, msg := http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again."
	if kind == SlowDown {
		status, code, msg = http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate."
		if p.opts.Protocol == SQS {
			code = "RequestThrottled"
		}
	}
	msg = fmt.Sprintf("%s (faultproxy: %s on %s)", msg, kind, op)
	h := w.Header()
	h.Set("X-Faultproxy", string(kind))
	h.Set("Connection", "close")
	if p.opts.Protocol == Azure {
		code = map[bool]string{true: "ServerBusy", false: "InternalError"}[kind == SlowDown]
		h.Set("x-ms-error-code", code)
		h.Set("x-ms-request-id", "faultproxy")
		h.Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		if op == "GetBlobProperties" {
			return // a HEAD answer has no body
		}
		fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?>`+"\n"+`<Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
		return
	}
	if p.opts.Protocol == SQS {
		// AWS JSON 1.0; the query-compatible header carries the code the
		// query protocol would have.
		h.Set("Content-Type", "application/x-amz-json-1.0")
		h.Set("X-Amzn-Query-Error", code+";Receiver")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.sqs#%s","message":%q}`, code, msg)
		return
	}
	h.Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if op == "HeadObject" || op == "HeadBucket" {
		return // a HEAD answer has no body
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<Error><Code>%s</Code><Message>%s</Message><RequestId>faultproxy</RequestId></Error>`, code, msg)
}
