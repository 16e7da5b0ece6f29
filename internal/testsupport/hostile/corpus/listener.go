package corpus

import (
	"net"
	"sync"
)

// Listener is a TCP listener on 127.0.0.1 that records every connection
// made to it: the address the hostile files name, which must receive
// nothing.
type Listener struct {
	ln   net.Listener
	mu   sync.Mutex
	hits []string
}

// Listen starts a Listener.
func Listen() (*Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &Listener{ln: ln}
	go l.serve()
	return l, nil
}

func (l *Listener) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 512)
		n, _ := c.Read(buf)
		l.mu.Lock()
		l.hits = append(l.hits, string(buf[:n]))
		l.mu.Unlock()
		c.Close()
	}
}

// Addr is the listener's host:port.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Hits are the first bytes of every connection it received.
func (l *Listener) Hits() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.hits...)
}

// Close stops it.
func (l *Listener) Close() error { return l.ln.Close() }
