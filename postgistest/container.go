package postgistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Container is a PostGIS container started by StartContainer.
type Container struct {
	// URL is a superuser connection string to its "postgres" database.
	URL   string
	Image string
	c     testcontainers.Container
}

func (c *Container) String() string {
	return fmt.Sprintf("container %.12s of %s", c.c.GetContainerID(), c.Image)
}

// Terminate stops and removes the container.
func (c *Container) Terminate(ctx context.Context) error {
	return testcontainers.TerminateContainer(c.c)
}

// StartContainer starts a container of image (an image with the
// postgis/postgis image's interface) through testcontainers-go and waits
// until PostGIS answers queries on its mapped port. The Docker API is
// testcontainers-go's: DOCKER_HOST, else the default socket; with podman,
// DOCKER_HOST=unix:///run/podman/podman.sock and
// TESTCONTAINERS_RYUK_DISABLED=true (the reaper's image may be out of
// reach). The image is pulled only when it is not present.
func StartContainer(ctx context.Context, image string) (*Container, error) {
	const password = "postgres"
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        image,
			ExposedPorts: []string{"5432/tcp"},
			Env:          map[string]string{"POSTGRES_PASSWORD": password},
			// Images differ in how often they log "ready" while they
			// initialise (the postgis/postgis image runs a temporary server
			// first, on a Unix socket only): wait for the TCP port, then for a
			// query (below). The port took over two minutes to answer once,
			// in a CI run with every test package beside it: five now.
			WaitingFor: wait.ForListeningPort("5432/tcp").WithStartupTimeout(5 * time.Minute),
		},
		Started: true,
	})
	if err != nil {
		if c != nil {
			_ = testcontainers.TerminateContainer(c)
		}
		return nil, fmt.Errorf("postgistest: PostGIS container of %s: %w", image, err)
	}
	out := &Container{Image: image, c: c}
	err = func() error {
		host, err := c.Host(ctx)
		if err != nil {
			return err
		}
		port, err := c.MappedPort(ctx, "5432/tcp")
		if err != nil {
			return err
		}
		out.URL = fmt.Sprintf("host=%s port=%d user=postgres password=%s dbname=postgres sslmode=disable",
			quote(host), port.Num(), password)
		return waitQuery(ctx, out.URL, 2*time.Minute)
	}()
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return nil, fmt.Errorf("postgistest: PostGIS container of %s: %w", image, err)
	}
	return out, nil
}

// waitQuery waits until the server at url answers a query that needs
// PostGIS to be installed.
func waitQuery(ctx context.Context, url string, patience time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	for {
		err := func() error {
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			defer ccancel()
			conn, err := pgx.Connect(cctx, url)
			if err != nil {
				return err
			}
			defer conn.Close(cctx)
			var n int
			if err := conn.QueryRow(cctx, `SELECT count(*) FROM pg_available_extensions WHERE name = 'postgis'`).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return errors.New("the image has no PostGIS extension")
			}
			return nil
		}()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no answer: %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// DockerAnswers reports whether a Docker API answers: DOCKER_HOST (a Unix
// socket that accepts connections, or any other address, which
// testcontainers-go then tries), else /var/run/docker.sock.
func DockerAnswers() bool {
	addr := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		addr = strings.TrimPrefix(h, "unix://")
	} else if h != "" {
		return true
	}
	c, err := net.DialTimeout("unix", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
