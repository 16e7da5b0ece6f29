package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"cloud.google.com/go/storage"
	sdkblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	sdkqueue "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/geoingest/geoingest/internal/azgrid"
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
	publicHost := fs.String("public-host", "127.0.0.1:4443", "host:port clients reach the storage emulator at")
	project := fs.String("project", "geoingest", "project of the topics and subscriptions")
	bucket := fs.String("bucket", "uploads", "bucket to create")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ps := pstest.NewServerWithAddress(*pubsubAddr)
	defer ps.Close()
	os.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:"+portOf(ps.Addr))
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{Host: "0.0.0.0", Port: uint16(*storagePort), Scheme: "http", PublicHost: *publicHost})
	if err != nil {
		return err
	}
	defer fake.Stop()
	os.Setenv("STORAGE_EMULATOR_HOST", fmt.Sprintf("http://127.0.0.1:%d", *storagePort))
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

func portOf(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[i+1:]
		}
	}
	return addr
}

// runAzgrid serves the Event Grid stand-in of the compose file deploy/compose/azure.yml
// (internal/azgrid) in front of Azurite: it creates the queues "uploads"
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
