package queue_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/queue"
	"github.com/stretchr/testify/require"
)

// writeSlowly writes content to p in pieces, pause apart, and closes done
// when the last piece is written.
func writeSlowly(t *testing.T, p string, content []byte, pieces int, pause time.Duration) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	f, err := os.Create(p)
	require.NoError(t, err)
	go func() {
		defer close(done)
		defer f.Close()
		step := (len(content) + pieces - 1) / pieces
		for i := 0; i < len(content); i += step {
			if i > 0 {
				time.Sleep(pause)
			}
			if _, err := f.Write(content[i:min(i+step, len(content))]); err != nil {
				panic(err)
			}
		}
	}()
	return done
}

// TestInboxSettle: a file written in pieces, with pauses longer than the
// poll interval but shorter than the settle interval, is delivered once,
// whole, after its last piece; with no settle interval (two scans that
// agree), the same writing is taken half-written, which is the failure
// the settle interval prevents.
func TestInboxSettle(t *testing.T) {
	t.Parallel()
	content := []byte(strings.Repeat("0123456789", 1000))
	const poll, pause = 50 * time.Millisecond, 400 * time.Millisecond
	for _, tc := range []struct {
		settle    time.Duration
		wantWhole bool
	}{{settle: time.Second, wantWhole: true}, {settle: 0, wantWhole: false}} {
		t.Run(tc.settle.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r, err := queue.NewInbox(dir, queue.InboxOptions{Poll: poll, Settle: tc.settle})
			require.NoError(t, err)
			p := filepath.Join(dir, "big.geojson")
			done := writeSlowly(t, p, content, 3, pause)
			ctx := context.Background()
			var sizes []int64
			deadline := time.Now().Add(10 * time.Second)
			for len(sizes) == 0 || (!tc.wantWhole && sizes[len(sizes)-1] != int64(len(content))) {
				require.True(t, time.Now().Before(deadline), "nothing delivered")
				msgs, err := r.Receive(ctx, 10)
				require.NoError(t, err)
				for _, m := range msgs {
					st, err := os.Stat(string(m.Body))
					require.NoError(t, err)
					sizes = append(sizes, st.Size())
					require.NoError(t, r.Ack(ctx, m))
				}
			}
			<-done
			if tc.wantWhole {
				require.Equal(t, []int64{int64(len(content))}, sizes, "delivered once, whole")
				requireNone(t, r, 3*tc.settle)
				return
			}
			require.Less(t, sizes[0], int64(len(content)), "without a settle interval a file written in pieces is taken half-written")
		})
	}
}

// TestInboxSkipsInProgressNames: files that copy tools write to before
// renaming them are never delivered; the renamed file is.
func TestInboxSkipsInProgressNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := queue.NewInbox(dir, queue.InboxOptions{Poll: 50 * time.Millisecond})
	require.NoError(t, err)
	names := []string{".a.geojson.Xy12Zq", "b.geojson.part", "c.geojson.PART", "d.geojson.tmp", "e.geojson.crdownload",
		"f.geojson~", "g.zip.filepart", "h.zip.partial"}
	for _, n := range names {
		require.True(t, queue.InProgressName(n), n)
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644))
	}
	for _, n := range []string{"parcels.geojson", "parts.zip", "tmp.shp", "a.partition.geojson"} {
		require.False(t, queue.InProgressName(n), n)
	}
	requireNone(t, r, time.Second)
	require.NoError(t, os.Rename(filepath.Join(dir, "b.geojson.part"), filepath.Join(dir, "b.geojson")))
	got := receiveAll(t, r, 1, 5*time.Second)
	require.Len(t, got, 1)
	require.Equal(t, filepath.Join(dir, "b.geojson"), string(got[0].Body))
}

// TestInboxSetSettlesTogether: a file of a set (a shapefile's parts) is
// delivered only once every part present has settled: a .shp copied
// first is not taken while its .dbf is still being written.
func TestInboxSetSettlesTogether(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	setOf := func(rel string) string {
		if ext := filepath.Ext(rel); ext == ".shp" || ext == ".dbf" || ext == ".shx" {
			return strings.TrimSuffix(rel, ext)
		}
		return ""
	}
	const settle = 600 * time.Millisecond
	r, err := queue.NewInbox(dir, queue.InboxOptions{Poll: 50 * time.Millisecond, Settle: settle, SetOf: setOf})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.shp"), []byte("shp"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.shx"), []byte("shx"), 0o644))
	done := writeSlowly(t, filepath.Join(dir, "a.dbf"), []byte(strings.Repeat("d", 3000)), 4, 400*time.Millisecond)
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	var first time.Time
	for first.IsZero() {
		require.True(t, time.Now().Before(deadline), "nothing delivered")
		msgs, err := r.Receive(ctx, 10)
		require.NoError(t, err)
		if len(msgs) > 0 {
			first = time.Now()
			select {
			case <-done:
			default:
				t.Fatalf("%s delivered while a.dbf was still being written", msgs[0].Body)
			}
		}
	}
	require.False(t, r.Settling())
}

// TestInboxSettling: Settling reports a file seen and not yet settled.
func TestInboxSettling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := queue.NewInbox(dir, queue.InboxOptions{Poll: 50 * time.Millisecond, Settle: 500 * time.Millisecond})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = r.Receive(ctx, 1)
	require.NoError(t, err)
	require.False(t, r.Settling(), "an empty inbox has nothing coming")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.geojson"), []byte("{}"), 0o644))
	msgs, err := r.Receive(ctx, 1)
	require.NoError(t, err)
	require.Empty(t, msgs)
	require.True(t, r.Settling())
	got := receiveAll(t, r, 1, 5*time.Second)
	require.Len(t, got, 1)
	require.False(t, r.Settling())
}
