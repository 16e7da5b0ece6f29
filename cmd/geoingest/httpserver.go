package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	consolepkg "github.com/geoingest/geoingest/internal/console"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// opsServer serves /metrics, /healthz and /readyz, and the console when
// one is given.
type opsServer struct {
	srv *http.Server
	ln  net.Listener
}

// startOps listens on addr and serves the registry's metrics, /healthz
// (200 while the process runs) and /readyz (200 while ready reports nil,
// else 503 with the error), and console (nil for none) on its routes
// (console.Routes). Returns the listen error.
func startOps(addr string, reg *prometheus.Registry, ready func(context.Context) error, console http.Handler, log *slog.Logger) (*opsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	if console != nil {
		for _, p := range consolepkg.Routes {
			mux.Handle(p, console)
		}
	}
	s := &opsServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "error", err.Error())
		}
	}()
	if console != nil {
		log.Info("serving /metrics, /healthz, /readyz and the console", "addr", ln.Addr().String(), "console", "http://"+ln.Addr().String()+"/")
	} else {
		log.Info("serving /metrics, /healthz, /readyz", "addr", ln.Addr().String())
	}
	return s, nil
}

// Close stops the server, waiting briefly for requests in flight.
func (s *opsServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}
