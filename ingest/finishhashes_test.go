package ingest

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// oldHashes is a HashUpgrader that records which jobs it was asked about
// and reports every one of them as holding old hashes.
type oldHashes struct {
	mu    sync.Mutex
	asked []string
}

func (h *oldHashes) HashUpgradeJobs(context.Context) ([]string, error) { return nil, nil }

func (h *oldHashes) HashesOld(_ context.Context, job string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, job)
	return true, nil
}

func (h *oldHashes) UpgradeHashes(context.Context, string, string, int) (HashBatch, error) {
	return HashBatch{Rewritten: 1}, nil
}

// TestFinishHashesOnlyNewVersions: a batch command looks for old-form
// match hashes only in the jobs that replaced a generation (a new version
// keeps rows in place, possibly from before the current form); a
// source's first version was written whole with the current form, and
// reading it again would cost a scan of all its rows.
func TestFinishHashesOnlyNewVersions(t *testing.T) {
	h := &oldHashes{}
	m := &Maintainer{Hashes: h}
	m.WrittenJob(Result{JobID: "first", Outcome: Written})
	m.WrittenJob(Result{JobID: "second", Outcome: Written, Replaced: "first-of-another"})
	p, err := m.FinishHashes(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"second"}, h.asked)
	require.EqualValues(t, 1, p.Walked)
	require.EqualValues(t, 1, p.Rewritten)
}
