package faultproxy_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/geoingest/geoingest/internal/testsupport/faultproxy"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// TestAzureQueueAndBlobFaults runs Azurite's Queue and Blob services
// through proxies of the Azure protocol, with the SDK's retries off:
// operations are named as Azure names them, errors have Azure's codes, and
// a reset of a DeleteMessage or an UpdateMessage leaves the action done
// upstream although the client saw it fail.
func TestAzureQueueAndBlobFaults(t *testing.T) {
	ctx := context.Background()
	az := testsrv.Azurite(t)
	qp, err := faultproxy.New(strings.TrimSuffix(az.QueueURL, "/"+testsrv.AzureAccount), faultproxy.Options{Protocol: faultproxy.Azure})
	require.NoError(t, err)
	t.Cleanup(qp.Close)
	bp, err := faultproxy.New(strings.TrimSuffix(az.BlobURL, "/"+testsrv.AzureAccount), faultproxy.Options{Protocol: faultproxy.Azure})
	require.NoError(t, err)
	t.Cleanup(bp.Close)
	cs := strings.NewReplacer(az.QueueURL, qp.URL()+"/"+testsrv.AzureAccount, az.BlobURL, bp.URL()+"/"+testsrv.AzureAccount).Replace(az.ConnectionString)
	noRetry := policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}
	svc, err := azqueue.NewServiceClientFromConnectionString(cs, &azqueue.ClientOptions{ClientOptions: noRetry})
	require.NoError(t, err)
	direct := az.NewQueue(t, "faults")
	u := strings.TrimSuffix(direct.URL(), "/")
	q := svc.NewQueueClient(u[strings.LastIndex(u, "/")+1:])
	code := func(err error) (int, string) {
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			return re.StatusCode, re.ErrorCode
		}
		return 0, ""
	}
	visible := func() int {
		got, err := direct.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: ptrTo(int32(32))})
		require.NoError(t, err)
		return len(got.Messages)
	}

	qp.Arm("PutMessage", faultproxy.Error500)
	_, err = q.EnqueueMessage(ctx, "m", nil)
	s, c := code(err)
	require.Equal(t, http.StatusInternalServerError, s, "%v", err)
	require.Equal(t, "InternalError", c)
	require.Zero(t, visible())
	_, err = q.EnqueueMessage(ctx, "m", nil)
	require.NoError(t, err)

	qp.Arm("GetMessages", faultproxy.SlowDown)
	_, err = q.DequeueMessage(ctx, nil)
	s, c = code(err)
	require.Equal(t, http.StatusServiceUnavailable, s, "%v", err)
	require.Equal(t, "ServerBusy", c)

	got, err := q.DequeueMessage(ctx, &azqueue.DequeueMessageOptions{VisibilityTimeout: ptrTo(int32(1))})
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	m := got.Messages[0]
	qp.Arm("UpdateMessage", faultproxy.Reset)
	_, err = q.UpdateMessage(ctx, *m.MessageID, *m.PopReceipt, "m", &azqueue.UpdateMessageOptions{VisibilityTimeout: ptrTo(int32(600))})
	require.Error(t, err)
	require.Zero(t, code2(err), "a reset, not an answer: %v", err)
	// Upstream acted: the message is hidden for 600 s, and its old pop
	// receipt is no longer valid.
	_, err = direct.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil)
	_, c = code(err)
	require.Equal(t, "PopReceiptMismatch", c, "the old pop receipt after the update: %v", err)

	_, err = direct.EnqueueMessage(ctx, "n", nil)
	require.NoError(t, err)
	got, err = q.DequeueMessage(ctx, nil)
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	m = got.Messages[0]
	qp.Arm("DeleteMessage", faultproxy.Reset)
	_, err = q.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil)
	require.Error(t, err)
	_, err = direct.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil)
	s, _ = code(err)
	require.Equal(t, http.StatusNotFound, s, "deleted upstream although the client saw a reset: %v", err)

	qp.Arm("GetQueueProperties", faultproxy.Error500)
	_, err = q.GetProperties(ctx, nil)
	s, _ = code(err)
	require.Equal(t, http.StatusInternalServerError, s, "%v", err)
	require.Equal(t, map[string]int{"500 PutMessage": 1, "slowdown GetMessages": 1, "reset UpdateMessage": 1, "reset DeleteMessage": 1,
		"500 GetQueueProperties": 1}, qp.Counts())

	// The Blob service: operations named, a truncated GetBlob.
	container := az.NewContainer(t, "faults")
	bc, err := azblob.NewClientFromConnectionString(cs, &azblob.ClientOptions{ClientOptions: noRetry})
	require.NoError(t, err)
	_, err = bc.UploadBuffer(ctx, container, "a/b.txt", []byte(strings.Repeat("x", 4096)), nil)
	require.NoError(t, err)
	bp.Arm("GetBlobProperties", faultproxy.SlowDown)
	_, err = bc.ServiceClient().NewContainerClient(container).NewBlobClient("a/b.txt").GetProperties(ctx, nil)
	s, _ = code(err)
	require.Equal(t, http.StatusServiceUnavailable, s, "%v", err)
	bp.Arm("GetBlob", faultproxy.Truncate)
	r, err := bc.DownloadStream(ctx, container, "a/b.txt", nil)
	if err == nil {
		buf := make([]byte, 8192)
		n := 0
		for err == nil {
			var k int
			k, err = r.Body.Read(buf[n:])
			n += k
		}
		r.Body.Close()
		require.Less(t, n, 4096, "a truncated body")
	}
	require.Equal(t, map[string]int{"slowdown GetBlobProperties": 1, "truncate GetBlob": 1}, bp.Counts())
}

func code2(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func ptrTo[T any](v T) *T { return &v }
