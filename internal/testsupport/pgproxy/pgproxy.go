// Package pgproxy is a TCP proxy in front of a PostgreSQL server for
// tests, which can lose a commit's acknowledgement: once armed
// (LoseNextCommitAck), it forwards the next COMMIT a client sends, lets
// the server execute it and answer, and cuts the client's connection
// instead of passing the answer on. The transaction is committed on the
// server; the client sees its connection die with its COMMIT
// unanswered, which is what a failover (or any network cut) does to a
// commit in the moment between the server's commit and its
// acknowledgement. It reads the wire protocol only as far as message
// frames (and the text of simple-protocol queries: pgx sends COMMIT as
// one).
package pgproxy

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Proxy is a running proxy.
type Proxy struct {
	// URL is the database's connection string through the proxy.
	URL string

	ln      net.Listener
	network string
	addr    string
	armed   atomic.Bool
	lost    atomic.Int64
	wg      sync.WaitGroup
}

// Start proxies the database of url (TCP or Unix socket) on 127.0.0.1.
func Start(url string) (*Proxy, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	p := &Proxy{network: "tcp", addr: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))}
	if filepath.IsAbs(cfg.Host) {
		p.network, p.addr = "unix", filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))
	}
	p.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	q := func(s string) string { return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'" }
	p.URL = fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable",
		p.ln.Addr().(*net.TCPAddr).Port, q(cfg.User), q(cfg.Password), q(cfg.Database))
	go p.serve()
	return p, nil
}

// LoseNextCommitAck arms the proxy: the next COMMIT any client sends
// through it is executed and its acknowledgement lost.
func (p *Proxy) LoseNextCommitAck() { p.armed.Store(true) }

// Lost is how many acknowledgements the proxy has lost.
func (p *Proxy) Lost() int64 { return p.lost.Load() }

// Close stops accepting connections (open ones go on until they end).
func (p *Proxy) Close() error { return p.ln.Close() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial(p.network, p.addr)
		if err != nil {
			c.Close()
			continue
		}
		go p.conn(c, s)
	}
}

// conn relays one session. Client to server it reads frames; the server's
// answers are relayed by a goroutine until the session loses an ack, when
// the client is cut and the server's answer to the COMMIT is read to its
// ReadyForQuery (so the commit has happened) before the server side is
// closed.
func (p *Proxy) conn(c, s net.Conn) {
	defer c.Close()
	defer s.Close()
	var mu sync.Mutex
	cut := false
	answered := make(chan struct{}) // the server's answer to the lost COMMIT is complete
	go func() {
		defer close(answered)
		for {
			typ, body, err := readFrame(s)
			if err != nil {
				return
			}
			mu.Lock()
			lost := cut
			if !lost {
				_, err = c.Write(frame(typ, body))
			}
			mu.Unlock()
			if err != nil || lost && typ == 'Z' {
				return
			}
		}
	}()
	// The startup packet (and an SSLRequest before it) has no type byte.
	if !relayUntyped(c, s) {
		return
	}
	for {
		typ, body, err := readFrame(c)
		if err != nil {
			return
		}
		if typ == 'Q' && isCommit(body) && p.armed.CompareAndSwap(true, false) {
			// The client is cut before its COMMIT goes on: cut after, the
			// relay could pass the server's answer on first (a race a
			// loaded machine lost: the test's commit was acknowledged).
			mu.Lock()
			cut = true
			c.Close() // the client hears nothing more
			mu.Unlock()
			if _, err := s.Write(frame(typ, body)); err != nil {
				return
			}
			p.lost.Add(1)
			<-answered // ReadyForQuery: the COMMIT has been executed
			return
		}
		if _, err := s.Write(frame(typ, body)); err != nil {
			return
		}
	}
}

// relayUntyped relays the startup packet; an SSL or GSS request before it
// is answered 'N' by the proxy itself (the server's answers are then all
// frames).
func relayUntyped(c, s net.Conn) bool {
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return false
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		if n < 8 {
			return false
		}
		rest := make([]byte, n-8)
		if _, err := io.ReadFull(c, rest); err != nil {
			return false
		}
		code := binary.BigEndian.Uint32(hdr[4:])
		if code == 80877103 || code == 80877104 { // SSLRequest, GSSENCRequest
			if _, err := c.Write([]byte{'N'}); err != nil {
				return false
			}
			continue
		}
		_, err := s.Write(append(hdr[:], rest...))
		return err == nil
	}
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:]))
	if n < 4 {
		return 0, nil, fmt.Errorf("pgproxy: bad frame length %d", n)
	}
	body := make([]byte, n-4)
	_, err := io.ReadFull(r, body)
	return hdr[0], body, err
}

func frame(typ byte, body []byte) []byte {
	out := make([]byte, 5+len(body))
	out[0] = typ
	binary.BigEndian.PutUint32(out[1:], uint32(len(body)+4))
	copy(out[5:], body)
	return out
}

func isCommit(body []byte) bool {
	q := strings.ToLower(strings.TrimSpace(strings.TrimRight(string(body), "\x00")))
	q = strings.TrimSuffix(q, ";")
	return q == "commit" || q == "end" || q == "commit transaction"
}
