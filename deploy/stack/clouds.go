package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"cloud.google.com/go/storage"
	sdkblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	sdkqueue "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/geoingest/geoingest/internal/testsupport/azgrid"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/types/known/durationpb"
)

// runGCP serves the Google Cloud emulators of the compose file deploy/compose/gcp.yml:
// the Pub/Sub emulator (pstest) and fake-gcs-server, with the topic
// "uploads", its subscription "geoingest" (a dead-letter policy to the
// topic "uploads-dlq", which has the subscription "uploads-dlq"), and the
// bucket "uploads" notifying the topic of its object events (payload
// JSON_API_V1), as `gcloud storage buckets notifications create` does.
func runGCP(ctx context.Context, log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("gcp", flag.ContinueOnError)
	pubsubAddr := fs.String("pubsub", "0.0.0.0:8085", "address of the Pub/Sub emulator")
	storagePort := fs.Int("storage-port", 4443, "port of the Cloud Storage emulator (plain HTTP)")
	publicHost := fs.String("public-host", "127.0.0.1:4443", "host:port of the storage emulator's links (any host name reaches it)")
	project := fs.String("project", "geoingest", "project of the topics and subscriptions")
	bucket := fs.String("bucket", "uploads", "bucket to create")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ps := pstest.NewServerWithAddress(*pubsubAddr)
	defer ps.Close()
	os.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:"+portOf(ps.Addr))
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, Scheme: "http", PublicHost: *publicHost})
	if err != nil {
		return err
	}
	defer fake.Stop()
	ln, err := net.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", *storagePort))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: anyHost(*publicHost, fake.HTTPHandler()), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	os.Setenv("STORAGE_EMULATOR_HOST", "http://"+ln.Addr().String())
	pc, err := pubsub.NewClient(ctx, *project)
	if err != nil {
		return err
	}
	defer pc.Close()
	topic := "projects/" + *project + "/topics/uploads"
	dlq := topic + "-dlq"
	for _, t := range []string{topic, dlq} {
		if _, err := pc.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: t}); err != nil {
			return err
		}
	}
	for _, s := range []*pubsubpb.Subscription{
		{Name: "projects/" + *project + "/subscriptions/geoingest", Topic: topic, AckDeadlineSeconds: 60,
			DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: dlq, MaxDeliveryAttempts: 10}},
		{Name: "projects/" + *project + "/subscriptions/uploads-dlq", Topic: dlq, AckDeadlineSeconds: 60,
			MessageRetentionDuration: durationpb.New(7 * 24 * time.Hour)},
	} {
		if _, err := pc.SubscriptionAdminClient.CreateSubscription(ctx, s); err != nil {
			return err
		}
	}
	fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: *bucket})
	sc, err := storage.NewClient(ctx, option.WithoutAuthentication())
	if err != nil {
		return err
	}
	defer sc.Close()
	if _, err := sc.Bucket(*bucket).AddNotification(ctx, &storage.Notification{TopicProjectID: *project, TopicID: "uploads",
		PayloadFormat: storage.JSONPayload}); err != nil {
		return err
	}
	log.Info("gcp emulators ready", "pubsub", ps.Addr, "storage", *storagePort, "subscription", "projects/"+*project+"/subscriptions/geoingest")
	<-ctx.Done()
	return nil
}

// anyHost serves h as if every request named publicHost. fake-gcs-server
// routes a generation-pinned read (the XML API's GET /BUCKET/OBJECT) by the
// Host header: a request whose Host is not its public host is taken for a
// virtual-hosted bucket named after the host, and the read fails with "no
// such object". In the compose stack geoingest reaches the emulator as
// gcp:4443 and the host as 127.0.0.1:4443; both must read the same objects.
func anyHost(publicHost string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Host = publicHost
		h.ServeHTTP(w, r)
	})
}

func portOf(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[i+1:]
		}
	}
	return addr
}

// runAzgrid serves the Event Grid stand-in of the compose file deploy/compose/azure.yml
// (internal/testsupport/azgrid) in front of Azurite: it creates the queues "uploads"
// and "uploads-dlq" and the container "uploads", then proxies the Blob
// service and queues an Event Grid event for each blob write and delete.
// AZURE_STORAGE_CONNECTION_STRING names Azurite.
func runAzgrid(ctx context.Context, log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("azgrid", flag.ContinueOnError)
	addr := fs.String("listen", ":10010", "address of the Blob proxy")
	queue := fs.String("queue", "uploads", "queue of the events")
	container := fs.String("container", "uploads", "container to create")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	blobURL := os.Getenv("STACK_AZURITE_BLOB_URL")
	if cs == "" || blobURL == "" {
		return fmt.Errorf("set AZURE_STORAGE_CONNECTION_STRING and STACK_AZURITE_BLOB_URL (http://azurite:10000/devstoreaccount1)")
	}
	bc, err := sdkblob.NewClientFromConnectionString(cs, nil)
	if err != nil {
		return err
	}
	svc, err := sdkqueue.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		return err
	}
	q := svc.NewQueueClient(*queue)
	if err := retry(ctx, 2*time.Minute, func() error {
		for _, name := range []string{*queue, *queue + "-dlq"} {
			if _, err := svc.NewQueueClient(name).Create(ctx, nil); err != nil && !exists(err) {
				return err
			}
		}
		if _, err := bc.CreateContainer(ctx, *container, nil); err != nil && !exists(err) {
			return err
		}
		return nil
	}); err != nil {
		return err
	}
	br, err := azgrid.New(blobURL, bc, q)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *addr, Handler: br, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); srv.Close() }()
	log.Info("azgrid ready", "listen", *addr, "queue", *queue, "container", *container)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// exists reports whether err says the queue or container is there already.
func exists(err error) bool {
	s := err.Error()
	for _, code := range []string{"QueueAlreadyExists", "ContainerAlreadyExists", "409"} {
		if strings.Contains(s, code) {
			return true
		}
	}
	return false
}

// runSAS prints a shared access signature (the query string, without the
// "?") for the container named, signed with the account key of
// AZURE_STORAGE_CONNECTION_STRING: what an uploader without Azure's tools
// needs to put blobs through the Event Grid stand-in with curl
// (PUT http://127.0.0.1:10010/devstoreaccount1/CONTAINER/NAME?SAS with
// x-ms-blob-type: BlockBlob). It may read, add, create, write and delete
// blobs, for --hours.
func runSAS(_ context.Context, _ *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("sas", flag.ContinueOnError)
	container := fs.String("container", "uploads", "container the signature is for")
	hours := fs.Int("hours", 24, "hours the signature is valid")
	if err := fs.Parse(args); err != nil {
		return err
	}
	q, err := sasQuery(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), *container, time.Duration(*hours)*time.Hour)
	if err != nil {
		return err
	}
	fmt.Println(q)
	return nil
}

// sasQuery signs a container SAS with the account key of the connection
// string cs.
func sasQuery(cs, container string, valid time.Duration) (string, error) {
	kv := map[string]string{}
	for _, part := range strings.Split(cs, ";") {
		if k, v, ok := strings.Cut(part, "="); ok {
			kv[k] = v
		}
	}
	if kv["AccountName"] == "" || kv["AccountKey"] == "" {
		return "", fmt.Errorf("AZURE_STORAGE_CONNECTION_STRING names no AccountName and AccountKey")
	}
	cred, err := sdkblob.NewSharedKeyCredential(kv["AccountName"], kv["AccountKey"])
	if err != nil {
		return "", err
	}
	perms := sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true}
	q, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: time.Now().Add(-5 * time.Minute).UTC(),
		ExpiryTime: time.Now().Add(valid).UTC(), Permissions: perms.String(),
		ContainerName: container}.SignWithSharedKey(cred)
	if err != nil {
		return "", err
	}
	return q.Encode(), nil
}
