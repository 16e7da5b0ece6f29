package testsrv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/types/known/durationpb"
)

// GCPProject is the project of the test servers' topics and subscriptions.
const GCPProject = "geoingest-test"

// GCPServer is a running Pub/Sub emulator (pstest, on a loopback port)
// and Cloud Storage emulator (fake-gcs-server, on another), the storage
// emulator publishing bucket notifications to the Pub/Sub one.
type GCPServer struct {
	// PubsubHost is the emulator's host:port (PUBSUB_EMULATOR_HOST).
	PubsubHost string
	// StorageURL is the storage emulator's endpoint (http://127.0.0.1:PORT;
	// STORAGE_EMULATOR_HOST).
	StorageURL string
	Pubsub     *pubsub.Client
	Storage    *storage.Client
	fake       *fakestorage.Server
	ps         *pstest.Server
	http       *http.Server
}

var (
	gcpOnce sync.Once
	gcpSrv  *GCPServer
	gcpErr  error
	gcpSeq  struct {
		sync.Mutex
		n int
	}
)

// GCP returns the test binary's GCP emulators, started on first use and
// stopped by Stop. It sets PUBSUB_EMULATOR_HOST and STORAGE_EMULATOR_HOST
// in the process environment, so that a client the code under test makes
// (pubsub.NewClient, storage.NewClient) talks to them.
func GCP(t testing.TB) *GCPServer {
	t.Helper()
	gcpOnce.Do(func() { gcpSrv, gcpErr = startGCP() })
	if gcpErr != nil {
		t.Fatalf("testsrv: GCP emulators: %v", gcpErr)
	}
	return gcpSrv
}

func startGCP() (*GCPServer, error) {
	// Ack deadlines of a few seconds, so that redelivery tests are short.
	pstest.SetMinAckDeadline(time.Second)
	ps := pstest.NewServerWithAddress("127.0.0.1:0")
	os.Setenv("PUBSUB_EMULATOR_HOST", ps.Addr)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	publicHost := "127.0.0.1:" + strconv.Itoa(port)
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, Scheme: "http", PublicHost: publicHost})
	if err != nil {
		return nil, fmt.Errorf("fake-gcs-server: %w", err)
	}
	ln, err := net.Listen("tcp", publicHost)
	if err != nil {
		return nil, fmt.Errorf("fake-gcs-server: %w", err)
	}
	// fake-gcs-server routes a generation-pinned read (the XML API's GET
	// /BUCKET/OBJECT) by the Host header, and takes any host other than
	// its public one for a virtual-hosted bucket ("no such object"): every
	// request is served as if it named the public host, so that a client
	// may reach it through a proxy (internal/testsupport/faultproxy) too.
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Host = publicHost
		fake.HTTPHandler().ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	url := "http://" + publicHost
	os.Setenv("STORAGE_EMULATOR_HOST", url)
	ctx := context.Background()
	st, err := storage.NewClient(ctx, option.WithoutAuthentication())
	if err != nil {
		return nil, err
	}
	pc, err := pubsub.NewClient(ctx, GCPProject)
	if err != nil {
		return nil, err
	}
	if _, err := net.DialTimeout("tcp", ps.Addr, 5*time.Second); err != nil {
		return nil, fmt.Errorf("pstest: %w", err)
	}
	return &GCPServer{PubsubHost: ps.Addr, StorageURL: url, Pubsub: pc, Storage: st, fake: fake, ps: ps, http: hs}, nil
}

func stopGCP() {
	if gcpSrv != nil {
		gcpSrv.Pubsub.Close()
		gcpSrv.Storage.Close()
		gcpSrv.http.Close()
		gcpSrv.fake.Stop()
		gcpSrv.ps.Close()
	}
}

// Unique returns prefix with a number no other call of this test binary got.
func Unique(prefix string) string {
	gcpSeq.Lock()
	defer gcpSeq.Unlock()
	gcpSeq.n++
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), gcpSeq.n)
}

// NewTopic creates a topic and returns its name (projects/P/topics/T).
func (s *GCPServer) NewTopic(t testing.TB, id string) string {
	t.Helper()
	name := "projects/" + GCPProject + "/topics/" + Unique(id)
	if _, err := s.Pubsub.TopicAdminClient.CreateTopic(context.Background(), &pubsubpb.Topic{Name: name}); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return name
}

// NewSubscription creates a subscription of topic with the ack deadline
// given and, when dlqTopic is set, a dead-letter policy to it (100
// delivery attempts: what makes Pub/Sub count the attempts). It returns
// its name (projects/P/subscriptions/S).
func (s *GCPServer) NewSubscription(t testing.TB, topic string, ackDeadline time.Duration, dlqTopic string) string {
	t.Helper()
	name := "projects/" + GCPProject + "/subscriptions/" + Unique("sub")
	sub := &pubsubpb.Subscription{Name: name, Topic: topic, AckDeadlineSeconds: int32(ackDeadline / time.Second),
		MessageRetentionDuration: durationpb.New(time.Hour)}
	if dlqTopic != "" {
		sub.DeadLetterPolicy = &pubsubpb.DeadLetterPolicy{DeadLetterTopic: dlqTopic, MaxDeliveryAttempts: 100}
	}
	if _, err := s.Pubsub.SubscriptionAdminClient.CreateSubscription(context.Background(), sub); err != nil {
		t.Fatalf("create subscription %s: %v", name, err)
	}
	return name
}

// NewBucket creates a bucket, with object versioning when versioned, and,
// when topic is set, a notification of its object events to topic
// (payload format JSON_API_V1).
func (s *GCPServer) NewBucket(t testing.TB, name string, versioned bool, topic string) {
	t.Helper()
	s.fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name, VersioningEnabled: versioned})
	if topic == "" {
		return
	}
	parts := strings.Split(topic, "/")
	if len(parts) != 4 {
		t.Fatalf("topic %s: not projects/P/topics/T", topic)
	}
	project, id := parts[1], parts[3]
	if _, err := s.Storage.Bucket(name).AddNotification(context.Background(), &storage.Notification{
		TopicProjectID: project, TopicID: id, PayloadFormat: storage.JSONPayload}); err != nil {
		t.Fatalf("bucket %s: add notification: %v", name, err)
	}
}

// Published returns every message the Pub/Sub emulator holds or held, with
// its acknowledgement count (pstest.Message.Acks).
func (s *GCPServer) Published() []*pstest.Message { return s.ps.Messages() }
