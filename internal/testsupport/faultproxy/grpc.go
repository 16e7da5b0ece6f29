package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// GRPC is a fault proxy for a gRPC service (the Pub/Sub emulator): every
// method is forwarded as raw messages, without knowing the service's
// types, and faulted by the same rules as the HTTP proxy. An operation
// is the method's name ("Pull", "Acknowledge", "ModifyAckDeadline",
// "Publish", "GetSubscription", ...). The kinds mean:
//
//   - Error500: the call fails with INTERNAL, not forwarded;
//   - SlowDown: the call fails with UNAVAILABLE, not forwarded (a
//     throttled or unreachable server);
//   - Reset (and Truncate): the call is forwarded and upstream acts, then
//     the answer is dropped and the call fails with UNAVAILABLE: an
//     acknowledgement or a publish that happened although the client saw
//     it fail;
//   - Stall: the call is forwarded, then nothing is answered until the
//     client's deadline (or StallMax);
//   - Latency: Options.Latency, then forwarded.
//
// Outages (Down) are not supported. Its zero value is not usable:
// NewGRPC.
type GRPC struct {
	*Proxy // the rules, armed faults and counts (its HTTP listener unused)
	addr   string
	srv    *grpc.Server
	up     *grpc.ClientConn
}

// NewGRPC starts a gRPC fault proxy on a free loopback port forwarding to
// upstream (host:port, plain text, as the emulators speak).
func NewGRPC(upstream string, opts Options) (*GRPC, error) {
	p, err := New("http://"+upstream, opts)
	if err != nil {
		return nil, err
	}
	up, err := grpc.NewClient(upstream, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		p.Close()
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.Close()
		up.Close()
		return nil, err
	}
	g := &GRPC{Proxy: p, addr: l.Addr().String(), up: up}
	g.srv = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(g.handle))
	go g.srv.Serve(l)
	return g, nil
}

// Addr is the proxy's host:port (PUBSUB_EMULATOR_HOST).
func (g *GRPC) Addr() string { return g.addr }

// Close stops the proxy.
func (g *GRPC) Close() {
	g.srv.Stop()
	g.up.Close()
	g.Proxy.Close()
}

// handle forwards one call (unary or streaming), or fails it.
func (g *GRPC) handle(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "faultproxy: no method")
	}
	op := method[strings.LastIndexByte(method, '/')+1:]
	kind := g.pick(op)
	switch kind {
	case Error500:
		return status.Errorf(codes.Internal, "faultproxy: %s on %s", kind, op)
	case SlowDown:
		return status.Errorf(codes.Unavailable, "faultproxy: %s on %s", kind, op)
	case Latency:
		select {
		case <-time.After(g.opts.Latency):
		case <-ss.Context().Done():
			return ss.Context().Err()
		}
	}
	md, _ := metadata.FromIncomingContext(ss.Context())
	md = md.Copy()
	for _, k := range []string{":authority", "content-type", "user-agent", "te"} {
		md.Delete(k)
	}
	ctx := metadata.NewOutgoingContext(ss.Context(), md)
	cs, err := g.up.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	// The client's messages upstream.
	sent := make(chan error, 1)
	go func() {
		for {
			var m []byte
			if err := ss.RecvMsg(&m); err != nil {
				cs.CloseSend()
				if errors.Is(err, io.EOF) {
					err = nil
				}
				sent <- err
				return
			}
			if err := cs.SendMsg(&m); err != nil {
				sent <- err
				return
			}
		}
	}()
	// Upstream's answers to the client.
	for first := true; ; first = false {
		var m []byte
		err := cs.RecvMsg(&m)
		if err == nil && first {
			switch kind {
			case Reset, Truncate:
				return status.Errorf(codes.Unavailable, "faultproxy: %s on %s: upstream answered, the answer was dropped", kind, op)
			case Stall:
				select {
				case <-ss.Context().Done():
				case <-time.After(g.opts.StallMax):
				}
				return status.Errorf(codes.DeadlineExceeded, "faultproxy: %s on %s", kind, op)
			}
		}
		if first {
			if h, herr := cs.Header(); herr == nil {
				_ = ss.SendHeader(h)
			}
		}
		if err != nil {
			ss.SetTrailer(cs.Trailer())
			if errors.Is(err, io.EOF) {
				return <-sent
			}
			return err
		}
		if err := ss.SendMsg(&m); err != nil {
			return err
		}
	}
}

// rawCodec passes messages through as bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("faultproxy: raw codec: %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("faultproxy: raw codec: %T", v)
	}
	*b = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
