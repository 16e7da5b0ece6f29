// Package pgdial dials geoingest's PostgreSQL connections with TCP
// timeouts of geoingest's own, so that a statement on a connection to a
// primary that vanished without a reset fails within a bound instead of
// waiting for the kernel.
package pgdial

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Why: a primary whose machine vanishes without a reset (a cloud failover that
// drops the old host's packets, a partition) leaves every connection to
// it open, and a statement waiting on one waits for the kernel: about 15
// minutes of retransmissions (net.ipv4.tcp_retries2) for a statement
// sent and never acknowledged, for ever for one acknowledged whose answer
// never comes, unless keepalives are on. pgx sets none of that itself: it
// takes connect_timeout from the URL but none of libpq's keepalives_* or
// tcp_user_timeout (it would send them to the server as settings), and its
// dialer uses Go's default keepalives (15 s idle, then 9 probes 15 s
// apart). So geoingest dials its database connections itself, with the
// libpq parameters if the URL has them and these defaults if not:
const (
	// DefaultConnectTimeout bounds each host's connection attempt
	// (libpq's connect_timeout, seconds; pgx honours it) when the URL
	// names none: a dropped SYN otherwise waits for the kernel's retries,
	// about two minutes.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultTCPUserTimeout (libpq's tcp_user_timeout, milliseconds) is
	// the longest that sent data may stay unacknowledged before the
	// kernel drops the connection, keepalive probes included
	// (TCP_USER_TIMEOUT, Linux). A live server's kernel acknowledges at
	// once whatever its backend is doing, so a long statement is never
	// cut by it.
	DefaultTCPUserTimeout = 30 * time.Second
	// Keepalives (libpq's keepalives_idle, keepalives_interval,
	// keepalives_count, seconds) probe a connection that waits for an
	// answer: with the user timeout above, a connection to a vanished
	// host is dropped about 40 s after the last byte it received.
	DefaultKeepaliveIdle     = 10 * time.Second
	DefaultKeepaliveInterval = 5 * time.Second
	DefaultKeepaliveCount    = 3
)

// Settings are a connection's TCP settings.
type Settings struct {
	Keepalives                  bool
	Idle, Interval, UserTimeout time.Duration
	Count                       int
}

// libpqTCPParams are libpq's client-side TCP parameters, which pgx leaves
// in RuntimeParams (to be sent to the server, which refuses the
// keepalives_* ones) and Apply takes out. tcp_user_timeout is also a server setting of the same name, for the
// server's end of the socket; in a libpq URL it is the client's.
var libpqTCPParams = []string{"keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout"}

// Apply makes cfg's TCP connections use libpq's keepalive
// parameters and tcp_user_timeout from the URL (removed from the
// settings sent to the server), geoingest's defaults for those the URL
// does not give, and DefaultConnectTimeout when it names no
// connect_timeout. Unix-socket connections are dialled as before.
func Apply(cfg *pgconn.Config) (Settings, error) {
	s := Settings{Keepalives: true, Idle: DefaultKeepaliveIdle, Interval: DefaultKeepaliveInterval,
		Count: DefaultKeepaliveCount, UserTimeout: DefaultTCPUserTimeout}
	for _, k := range libpqTCPParams {
		v, ok := cfg.RuntimeParams[k]
		if !ok {
			continue
		}
		delete(cfg.RuntimeParams, k)
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s, fmt.Errorf("%s=%q: want a whole number of %s, 0 or more", k, v, map[bool]string{true: "milliseconds", false: "seconds"}[k == "tcp_user_timeout"])
		}
		switch k {
		case "keepalives":
			s.Keepalives = n != 0
		case "keepalives_idle":
			s.Idle = time.Duration(n) * time.Second
		case "keepalives_interval":
			s.Interval = time.Duration(n) * time.Second
		case "keepalives_count":
			s.Count = n
		case "tcp_user_timeout":
			s.UserTimeout = time.Duration(n) * time.Millisecond
		}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	d := &net.Dialer{KeepAlive: -1}
	if s.Keepalives {
		// 0 in a field: the system's default for it.
		d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: s.Idle, Interval: s.Interval, Count: s.Count}
		if s.Idle == 0 {
			d.KeepAliveConfig.Idle = -1
		}
		if s.Interval == 0 {
			d.KeepAliveConfig.Interval = -1
		}
		if s.Count == 0 {
			d.KeepAliveConfig.Count = -1
		}
	}
	if s.UserTimeout > 0 {
		ms := int(s.UserTimeout.Milliseconds())
		d.Control = func(network, _ string, c syscall.RawConn) error {
			if network != "tcp" && network != "tcp4" && network != "tcp6" {
				return nil
			}
			return setTCPUserTimeout(c, ms)
		}
	}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	return s, nil
}
