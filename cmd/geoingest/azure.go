package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	sdkblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	sdkqueue "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/geoingest/geoingest/ingest"
	ingestazblob "github.com/geoingest/geoingest/ingest/azblob"
	azqueue "github.com/geoingest/geoingest/queue/azqueue"
)

// azureClients are an account's Blob and Queue clients: from
// AZURE_STORAGE_CONNECTION_STRING when it is set (Azurite, or an account
// key), else for https://ACCOUNT.{blob,queue}.core.windows.net with
// DefaultAzureCredential (environment, workload identity, managed
// identity, the Azure CLI's login).
type azureClients struct {
	connString string
	account    string
	cred       *azidentity.DefaultAzureCredential
}

func newAzureClients(getenv func(string) string, account string) (*azureClients, error) {
	c := &azureClients{connString: getenv("AZURE_STORAGE_CONNECTION_STRING"), account: account}
	if c.connString != "" {
		return c, nil
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("azure credentials (DefaultAzureCredential: AZURE_CLIENT_ID and AZURE_TENANT_ID with a secret, certificate or federated token, a managed identity, or az login; or set AZURE_STORAGE_CONNECTION_STRING): %w", err)
	}
	c.cred = cred
	return c, nil
}

func (c *azureClients) queue(name string) (*sdkqueue.QueueClient, error) {
	if c.connString != "" {
		return sdkqueue.NewQueueClientFromConnectionString(c.connString, name, nil)
	}
	return sdkqueue.NewQueueClient(fmt.Sprintf("https://%s.queue.core.windows.net/%s", c.account, name), c.cred, nil)
}

func (c *azureClients) blob() (*sdkblob.Client, error) {
	if c.connString != "" {
		return sdkblob.NewClientFromConnectionString(c.connString, nil)
	}
	return sdkblob.NewClient(fmt.Sprintf("https://%s.blob.core.windows.net/", c.account), c.cred, nil)
}

// azureServe is cloudServe for azqueue://ACCOUNT/QUEUE.
func azureServe(ctx context.Context, m *Main, cons *ingest.Consumer, c *serveConfig, routes []ingest.Route, downloadTimeout time.Duration) (func(), error) {
	account, qname, err := azqueue.ParseURL(c.queueURL)
	if err != nil {
		return nil, fmt.Errorf("--queue-url: %w", err)
	}
	clients, err := newAzureClients(m.Getenv, account)
	if err != nil {
		return nil, err
	}
	q, err := clients.queue(qname)
	if err != nil {
		return nil, fmt.Errorf("--queue-url %s: %w", c.queueURL, err)
	}
	var dlq *sdkqueue.QueueClient
	if c.dlqURL != "" {
		dacct, dname, err := azqueue.ParseURL(c.dlqURL)
		if err != nil || dacct != account {
			return nil, fmt.Errorf("--dlq-url: want azqueue://%s/QUEUE (the account of --queue-url): %v", account, err)
		}
		if dlq, err = clients.queue(dname); err != nil {
			return nil, fmt.Errorf("--dlq-url %s: %w", c.dlqURL, err)
		}
	}
	bc, err := clients.blob()
	if err != nil {
		return nil, fmt.Errorf("blob client of %s: %w", account, err)
	}
	queueCheck := func(flag, url string, q *sdkqueue.QueueClient) startCheck {
		return startCheck{what: flag + " " + url, run: func(ctx context.Context) (string, error) {
			err := azqueue.Check(ctx, q)
			if errors.Is(err, azqueue.ErrNotFound) {
				return "", fatal(fmt.Errorf("%s %s: the queue does not exist: %w", flag, url, err))
			}
			return "", err
		}}
	}
	checks := []startCheck{queueCheck("--queue-url", c.queueURL, q)}
	if dlq != nil {
		checks = append(checks, queueCheck("--dlq-url", c.dlqURL, dlq))
	}
	for _, b := range routeBuckets(routes) {
		checks = append(checks, startCheck{what: "container " + b, run: func(ctx context.Context) (string, error) {
			_, err := bc.ServiceClient().NewContainerClient(b).GetProperties(ctx, nil)
			if bloberror.HasCode(err, bloberror.ContainerNotFound) {
				return "", fatal(fmt.Errorf("container %s of account %s: it does not exist: check --route (env GEOINGEST_ROUTES)", b, account))
			}
			return "", err
		}})
	}
	if err := runStartChecks(ctx, m.Log, c.startTimeout, checks); err != nil {
		return nil, fmt.Errorf("start-up: %w", err)
	}
	cons.Objects = ingestazblob.Objects{Client: bc, DownloadTimeout: downloadTimeout}
	cons.Receiver = azqueue.New(q, azqueue.Options{Wait: c.wait, Visibility: c.visibility, DeadLetter: dlq})
	cons.Visibility = c.visibility
	return func() {}, nil
}

// azureBackfill is cloudBackfill for azblob://ACCOUNT/CONTAINER.
func azureBackfill(ctx context.Context, getenv func(string) string, bucket, prefix string) (ingest.ObjectSource, func(context.Context, func(ingest.BackfillObject) error) error, string, func(), bool, error) {
	account, container, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(bucket, "azblob://"), "/"), "/")
	if !ok || account == "" || container == "" || strings.Contains(container, "/") {
		return nil, nil, "", nil, true, fmt.Errorf("--bucket %s: want azblob://ACCOUNT/CONTAINER", bucket)
	}
	clients, err := newAzureClients(getenv, account)
	if err != nil {
		return nil, nil, "", nil, true, err
	}
	bc, err := clients.blob()
	if err != nil {
		return nil, nil, "", nil, true, err
	}
	return ingestazblob.Objects{Client: bc}, func(ctx context.Context, fn func(ingest.BackfillObject) error) error {
		return ingestazblob.List(ctx, bc, container, prefix, fn)
	}, container, func() {}, true, nil
}
