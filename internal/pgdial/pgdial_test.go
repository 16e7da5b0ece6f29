package pgdial

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// sockopts dials a listener on 127.0.0.1 with cfg's DialFunc and reads
// the socket's TCP options back from the kernel.
func sockopts(t *testing.T, cfg *pgconn.Config) (keepalive, idle, interval, count, userTimeoutMS int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := cfg.DialFunc(context.Background(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	require.NoError(t, raw.Control(func(fd uintptr) {
		get := func(level, opt int) int {
			v, err := unix.GetsockoptInt(int(fd), level, opt)
			require.NoError(t, err)
			return v
		}
		keepalive = get(unix.SOL_SOCKET, unix.SO_KEEPALIVE)
		idle = get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
		interval = get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
		count = get(unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
		userTimeoutMS = get(unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	}))
	return
}

func parse(t *testing.T, url string) *pgconn.Config {
	t.Helper()
	cfg, err := pgconn.ParseConfig(url)
	require.NoError(t, err)
	return cfg
}

// TestApplySetsTheSocketsTCPTimeouts: a URL without TCP settings gets
// geoingest's (keepalives after 10 s idle, 3 probes 5 s apart, a 30 s
// TCP user timeout, a 10 s connect timeout) on the socket itself, as the
// kernel reports them; libpq's keepalives_* and tcp_user_timeout in the
// URL win and are not sent to the server as settings; keepalives=0
// turns keepalives off; a bad value is an error naming it.
func TestApplySetsTheSocketsTCPTimeouts(t *testing.T) {
	cfg := parse(t, "host=127.0.0.1 port=5432 dbname=x application_name=a")
	s, err := Apply(cfg)
	require.NoError(t, err)
	require.Equal(t, Settings{Keepalives: true, Idle: 10 * time.Second, Interval: 5 * time.Second, Count: 3, UserTimeout: 30 * time.Second}, s)
	require.Equal(t, DefaultConnectTimeout, cfg.ConnectTimeout)
	ka, idle, interval, count, ut := sockopts(t, cfg)
	require.Equal(t, []int{1, 10, 5, 3, 30000}, []int{ka, idle, interval, count, ut})

	cfg = parse(t, "postgres://u@127.0.0.1:5432,127.0.0.1:5433/x?connect_timeout=4&keepalives_idle=7&keepalives_interval=2&keepalives_count=6&tcp_user_timeout=12000&target_session_attrs=read-write")
	_, err = Apply(cfg)
	require.NoError(t, err)
	require.Equal(t, 4*time.Second, cfg.ConnectTimeout, "the URL's connect_timeout is kept")
	for _, k := range libpqTCPParams {
		require.NotContains(t, cfg.RuntimeParams, k, "a client setting is not sent to the server")
	}
	ka, idle, interval, count, ut = sockopts(t, cfg)
	require.Equal(t, []int{1, 7, 2, 6, 12000}, []int{ka, idle, interval, count, ut})
	for _, fb := range cfg.Fallbacks {
		require.NotEmpty(t, fb.Host, "every host of a multi-host URL is dialled by the same DialFunc")
	}

	cfg = parse(t, "host=127.0.0.1 keepalives=0 tcp_user_timeout=0")
	_, err = Apply(cfg)
	require.NoError(t, err)
	ka, _, _, _, ut = sockopts(t, cfg)
	require.Zero(t, ka)
	require.Zero(t, ut)

	_, err = Apply(parse(t, "host=127.0.0.1 keepalives_idle=soon"))
	require.ErrorContains(t, err, `keepalives_idle="soon"`)
}
